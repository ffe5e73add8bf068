package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image/imagetest"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/toobusy"
)

var (
	staticOnce sync.Once
	staticDir  string
	staticErr  error
)

// staticService builds the example service (variant fast or slow) as a static binary, as a
// FROM scratch image needs it.
func staticService(t *testing.T, variant string) string {
	t.Helper()
	staticOnce.Do(func() {
		if staticDir, staticErr = buildFolder("static"); staticErr != nil {
			return
		}
		for _, v := range []string{"fast", "slow"} {
			cmd := exec.Command("go", "build", "-tags", v, "-o", filepath.Join(staticDir, v), "../examples/service")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				staticErr = fmt.Errorf("go build %s: %v\n%s", v, err, out)
				return
			}
		}
	})
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return filepath.Join(staticDir, variant)
}

// serviceImage is the example service as a FROM scratch image: /app/server and /app/VERSION,
// run from /app. Without entrypoint, the image brings no command of its own.
func serviceImage(t *testing.T, variant, version string, entrypoint bool) v1.Image {
	t.Helper()
	bin, err := imagetest.LayerFromFile(staticService(t, variant), "app/server")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "app/VERSION", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(version) + 1)})
	tw.Write([]byte(version + "\n"))
	tw.Close()
	ver, err := imagetest.LayerFromTar(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cfg := v1.Config{WorkingDir: "/app", Env: []string{"PATH=/app", "GOMAXPROCS=2"}}
	if entrypoint {
		cfg.Entrypoint = []string{"/app/server"}
	}
	img, err := imagetest.Build([]v1.Layer{bin, ver}, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// armProcess is one process of the arms' user (nobody in these tests): its pid, command line,
// and the cgroup v2 group it runs in.
type armProcess struct{ pid, ppid, args, group, cpus string }

func armProcesses() []armProcess {
	var out []armProcess
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil || !regexp.MustCompile(`(?m)^Uid:\s+65534\s`).Match(status) || regexp.MustCompile(`(?m)^State:\s+Z`).Match(status) {
			continue
		}
		args, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		groups, _ := os.ReadFile(filepath.Join(d, "cgroup"))
		group := regexp.MustCompile(`(?m)^0::(.*)$`).FindSubmatch(groups)
		p := armProcess{pid: filepath.Base(d), args: strings.TrimSpace(strings.ReplaceAll(string(args), "\x00", " "))}
		if m := regexp.MustCompile(`(?m)^PPid:\s+(\d+)`).FindSubmatch(status); m != nil {
			p.ppid = string(m[1])
		}
		if m := regexp.MustCompile(`(?m)^Cpus_allowed_list:\s+(\S+)`).FindSubmatch(status); m != nil {
			p.cpus = string(m[1])
		}
		if group != nil {
			p.group = string(group[1])
		}
		out = append(out, p)
	}
	return out
}

// dockerSave is the image as `docker save` writes it.
func dockerSave(t *testing.T, img v1.Image) []byte {
	var b bytes.Buffer
	if err := imagetest.WriteArchive(&b, img, "perf-gate.test/service:e2e"); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ociLayoutPacked is the image as an OCI layout directory, packed as the CLI packs a directory.
func ociLayoutPacked(t *testing.T, img v1.Image) []byte {
	dir := t.TempDir()
	if err := imagetest.WriteLayout(dir, img); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tar", "-czf", "-", "-C", dir, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// imageSpec is a service spec without a command: the image's entrypoint runs.
const imageSpec = `{"health_path":"/health","health_timeout_seconds":5}`

// leftovers lists what of a run outlives it: processes of the arms' user (outside another
// test host's cgroup; in the champion's
// cgroup, beyond the one container the champion supervisor runs there again: runc and the
// service), mounts under the host's root, containers runc still knows, cgroups runc made, and
// staged images.
func leftovers(t *testing.T, h *host) []string {
	t.Helper()
	var left []string
	champion := 0
	for _, p := range armProcesses() {
		if other := regexp.MustCompile(`^/perf-gate-host-\d+/`); other.MatchString(p.group) && (h.Cgroup == "" || !strings.HasPrefix(p.group, "/"+filepath.Base(h.Cgroup)+"/")) {
			continue // another test's host
		}
		if strings.HasSuffix(p.group, "/champion") {
			if champion++; champion <= 2 {
				continue
			}
		}
		left = append(left, fmt.Sprintf("process %s (%s) in cgroup %s", p.pid, p.args, p.group))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, h.Root) {
			left = append(left, "mount "+line)
		}
	}
	states, _ := filepath.Glob(filepath.Join(h.Root, "arms", "challenger", ".runc", "*", "state.json"))
	for _, s := range states {
		left = append(left, "runc state "+s)
	}
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/c*-[0-9]*-[0-9]*")
	left = append(left, groups...)
	staged, _ := filepath.Glob(filepath.Join(h.Root, "releases", ".*"))
	for _, s := range staged {
		left = append(left, "staging "+s)
	}
	return left
}

// A container image is a build like a tarball: deployed by content (docker save's archive, an
// OCI layout packed by the CLI), started fresh in each arm by runc as the arm's user in its
// cgroup, measured, and stopped with nothing left; a slower image measures slower, and the
// host's champion serves after every run.
func TestAnImageBuildRunsInEachArmLikeATarball(t *testing.T) {
	if _, err := image.Runc(); err != nil {
		t.Skip(err)
	}
	h := newHost(t, hostOptions{})
	start := time.Now()
	out := h.must(bytes.NewReader(dockerSave(t, serviceImage(t, "fast", "image v1", true))), "deploy champion aaaaaaa")
	t.Logf("deploy of the fast image (docker-archive): %.2f s: %s", time.Since(start).Seconds(), strings.TrimSpace(out))
	if !strings.Contains(out, "container image sha256:") || !strings.Contains(out, `runs ["/app/server"]`) {
		t.Errorf("deploy said %q", out)
	}
	h.must(strings.NewReader(imageSpec), "promote aaaaaaa")
	waitPort(t, h.ChampionPort)
	if v := version(h.ChampionPort); v != "fast image v1" {
		t.Fatalf("the champion image answers %q", v)
	}
	// The image's process runs as the arm's user (nobody here), in the arm's cgroup.
	var server []armProcess
	for _, p := range armProcesses() {
		if p.args == "/app/server" {
			server = append(server, p)
		}
	}
	if len(server) != 1 || (h.Cgroup != "" && !strings.HasSuffix(server[0].group, filepath.Base(h.Cgroup)+"/champion")) {
		t.Fatalf("the champion's /app/server: %+v; want one, as nobody, in %s/champion", server, h.Cgroup)
	}
	// On the arm's CPUs: those runc was launched with.
	for _, p := range armProcesses() {
		if p.pid == server[0].ppid && p.cpus != server[0].cpus {
			t.Errorf("the champion's /app/server runs on CPUs %s, runc (%s) on %s", server[0].cpus, p.args, p.cpus)
		}
	}
	start = time.Now()
	out = h.must(bytes.NewReader(ociLayoutPacked(t, serviceImage(t, "slow", "image v2", true))), "deploy challenger bbbbbbb")
	t.Logf("deploy of the slow image (OCI layout, packed): %.2f s: %s", time.Since(start).Seconds(), strings.TrimSpace(out))

	plan := strings.Replace(runPlan("bbbbbbb", 4, 0.5), serviceSpec, imageSpec, 1)
	h.must(strings.NewReader(plan), "run img-1")
	progress := h.must(nil, "wait img-1")
	r := decodeResult(t, h.must(nil, "result img-1"))
	if r.Outcome.Status != "ok" {
		t.Fatalf("outcome %+v\n%s", r.Outcome, progress)
	}
	for _, want := range []string{
		"champion: container image sha256:", "challenger: container image sha256:",
		"the image asks for root and runs as the arm's user nobody",
		"challenger bbbbbbb healthy", "both arms stopped in",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s", want, progress)
		}
	}
	for _, line := range regexp.MustCompile(`(?m)^.*(healthy on|a fresh copy in|both arms stopped in).*$`).FindAllString(progress, -1) {
		t.Logf("timing: %s", line)
	}
	slower := 0
	for i := 0; i+1 < len(r.Slices); i += 2 {
		champ, chall := r.Slices[i], r.Slices[i+1]
		t.Logf("pair %d: champion (fast image) p50 %d µs p99 %d µs, challenger (slow image) p50 %d µs p99 %d µs", i/2, champ.LatencyUs.P50, champ.LatencyUs.P99, chall.LatencyUs.P50, chall.LatencyUs.P99)
		if chall.LatencyUs.P50 > champ.LatencyUs.P50 {
			slower++
		}
		// The arms' cgroups held the containers: their CPU was accounted.
		if champ.ServiceCPUUsPerRequest == nil || chall.ServiceCPUUsPerRequest == nil || *chall.ServiceCPUUsPerRequest <= 0 {
			t.Errorf("pair %d: no CPU accounted to an arm: %v %v", i/2, champ.ServiceCPUUsPerRequest, chall.ServiceCPUUsPerRequest)
		} else {
			t.Logf("pair %d: CPU per request: champion %.0f µs, challenger %.0f µs", i/2, *champ.ServiceCPUUsPerRequest, *chall.ServiceCPUUsPerRequest)
		}
	}
	t.Run("the slow image measures slower", func(t *testing.T) {
		if busy := toobusy.Result(r.Result); busy != "" {
			toobusy.Skip(t, busy)
		}
		if slower < len(r.Slices)/2-1 {
			t.Errorf("the slow image measured slower in only %d of %d pairs", slower, len(r.Slices)/2)
		}
	})
	// Each arm ran in its cgroup as its user: the host accounted CPU to both.
	for _, arm := range []string{"champion", "challenger"} {
		if a := r.Arms[arm]; a.HealthySeconds <= 0 || a.WorkBytes == nil || *a.WorkBytes == 0 {
			t.Errorf("%s: %+v", arm, a)
		}
	}
	if left := leftovers(t, h); len(left) > 0 {
		t.Errorf("after the run: %s", strings.Join(left, "\n"))
	}
	if v := version(h.ChampionPort); v != "fast image v1" {
		t.Errorf("after the run the champion answers %q", v)
	}
}

// An image the host cannot run fails as the challenger's start or its deploy, naming the field
// or the layer, and the champion serves on.
func TestABadImageFailsNamingTheFieldAndTheChampionServesOn(t *testing.T) {
	t.Parallel()
	if _, err := image.Runc(); err != nil {
		t.Skip(err)
	}
	h := newHost(t, hostOptions{})
	// The run's service spec is both arms': the champion is an image too.
	h.must(bytes.NewReader(dockerSave(t, serviceImage(t, "fast", "v1", true))), "deploy champion aaaaaaa")
	h.must(strings.NewReader(imageSpec), "promote aaaaaaa")
	waitPort(t, h.ChampionPort)
	// No entrypoint, and no service.command: the challenger's start says what to set.
	h.must(bytes.NewReader(dockerSave(t, serviceImage(t, "fast", "bare", false))), "deploy challenger bbbbbbb")
	plan := strings.Replace(runPlan("bbbbbbb", 2, 0.5), serviceSpec, imageSpec, 1)
	h.must(strings.NewReader(plan), "run bad-1")
	h.ssh(nil, "wait bad-1")
	var o contract.Outcome
	json.Unmarshal([]byte(h.must(nil, "result bad-1")), &struct{ Outcome *contract.Outcome }{&o})
	t.Logf("%s: %s", o.ErrorKind, strings.ReplaceAll(o.Message, "\n", " | "))
	if o.ErrorKind != "challenger_unhealthy" || !strings.Contains(o.Message, "service.command: the image sha256:") || !strings.Contains(o.Message, "has no entrypoint or cmd") {
		t.Errorf("outcome %+v; want the challenger's start to name service.command", o)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("the champion answers %q", v)
	}
	// An image for another architecture is refused at deploy, naming the field.
	arm, err := imagetest.Build(nil, v1.Config{Entrypoint: []string{"/app/server"}}, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := h.ssh(bytes.NewReader(dockerSave(t, arm)), "deploy challenger ccccccc")
	if code == 0 || !strings.Contains(stderr, "config.os/architecture") || !strings.Contains(stderr, "arm64") {
		t.Errorf("deploy of an arm64 image: exit %d, %s", code, stderr)
	}
	t.Logf("arm64 image: %s", strings.TrimSpace(stderr))
	// A tar that is neither a build's tar.gz nor an image.
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "server", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1})
	tw.Write([]byte("x"))
	tw.Close()
	_, stderr, code = h.ssh(&b, "deploy challenger ddddddd")
	if code == 0 || !strings.Contains(stderr, "neither a build's .tar.gz nor a container image") {
		t.Errorf("deploy of a plain tar: exit %d, %s", code, stderr)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("the champion answers %q", v)
	}
	if left := leftovers(t, h); len(left) > 0 {
		t.Errorf("after the failures: %s", strings.Join(left, "\n"))
	}
}
