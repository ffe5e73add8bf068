package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/toobusy"
)

const releaseVersion = "v0.0.0-e2e.1"

// A release as .github/workflows/release.yml builds it (the same release.sh), installed on a
// host without Go from a mirror of the release's assets, then gated against through the sshd
// and users it installed, with the perf-gate CLI.
func TestReleaseInstallsAHostWithoutGoThatRunsAGate(t *testing.T) {
	h := newInstalledHost(t)
	node, cli := nodeAndCLI(t)
	assets := filepath.Join(h.dir, "assets")
	start := time.Now()
	if out, err := exec.Command("../release.sh", releaseVersion, assets).CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	t.Logf("release.sh built both archives in %.1f s", time.Since(start).Seconds())
	checkReleaseAssets(t, assets)
	noGo := envWithoutGo(t)
	installer := filepath.Join(assets, "install.sh")

	// An archive that differs from its SHA256SUMS by one byte is refused before anything changes.
	tampered := filepath.Join(h.dir, "tampered")
	os.Mkdir(tampered, 0o755)
	archive := "perf-gate-host-" + releaseVersion + "-linux-" + runtime.GOARCH + ".tar.gz"
	body, _ := os.ReadFile(filepath.Join(assets, archive))
	body[len(body)/2] ^= 1
	writeFile(t, filepath.Join(tampered, archive), string(body))
	sums, _ := os.ReadFile(filepath.Join(assets, "SHA256SUMS"))
	writeFile(t, filepath.Join(tampered, "SHA256SUMS"), string(sums))
	out, err := h.install(installer, noGo, "--archive", filepath.Join(tampered, archive))
	if err == nil || !strings.Contains(out, "does not match") || !strings.Contains(out, "nothing was installed") {
		t.Fatalf("a tampered archive was not refused: %v\n%s", err, out)
	}
	if _, err := os.Stat(h.prefix); err == nil {
		t.Errorf("the refused archive left %s behind", h.prefix)
	}
	if exec.Command("id", h.ciUser).Run() == nil {
		t.Errorf("the refused archive created the user %s", h.ciUser)
	}

	// The release, fetched from a mirror of its assets, checked, and installed without Go.
	mirror := httptest.NewServer(http.FileServer(http.Dir(assets)))
	defer mirror.Close()
	out, err = h.install(installer, noGo, append(slices.Clone(sharedMachine), "--release", releaseVersion, "--download-url", mirror.URL)...)
	if err != nil {
		t.Fatalf("install.sh --release: %v\n%s", err, out)
	}
	for _, want := range []string{archive + " matches SHA256SUMS", "installed perf-host " + releaseVersion, "restrict,command="} {
		if !strings.Contains(out, want) {
			t.Errorf("install.sh --release did not say %q:\n%s", want, out)
		}
	}
	h.startSSHD()
	status, err := h.ssh(nil, "status")
	if err != nil || !strings.Contains(status, `"perf_host_version": "`+releaseVersion+`"`) {
		t.Fatalf("status over ssh does not name the release: %v\n%s", err, status)
	}

	// A short gate: the example service as champion, its slow build as challenger.
	champion, challenger := filepath.Join(h.dir, "champion.tgz"), filepath.Join(h.dir, "challenger.tgz")
	writeFile(t, champion, string(buildTarball(t, "fast", "v1", "exec ./service")))
	writeFile(t, challenger, string(buildTarball(t, "slow", "v2", "exec ./service")))
	config := filepath.Join(h.dir, "perf-gate.yml")
	writeFile(t, config, `service: {command: ["./start.sh"], health_path: /health, health_timeout_seconds: 10}
slo: {percentile: 50, budget_ms: 20}
slices: {seconds: 0.5, pairs: 3}
warmup_seconds: 0.5
workloads:
  - {name: work, rates: [200], connections: 4, requests: [{path: "/work?key={{rand 100}}"}]}
`)
	report := filepath.Join(h.dir, "report")
	// A gate measures: when the machine is too busy for it to vouch for its pairs, it says so.
	gateOut := toobusy.UntilQuiet(t, func(int) ([]byte, string) {
		gate := exec.Command(node, cli, "run", "--host", "127.0.0.1", "--port", strconv.Itoa(h.sshPort), "--user", h.ciUser,
			"--key", h.key, "--known-hosts", h.knownHosts, "--config", config, "--champion", champion, "--challenger", challenger, "--out", report)
		out, err := gate.CombinedOutput()
		code := gate.ProcessState.ExitCode()
		if busy := toobusy.Output(out); code == 2 && busy != "" {
			return out, busy
		}
		if code != 0 && code != 1 {
			t.Fatalf("perf-gate run against the released host exited %d (%v):\n%s", code, err, out)
		}
		return out, ""
	})
	if !regexp.MustCompile(`(?m)^(RED|GREEN|GREY)[^:]*: .*n=3 pairs\)$`).Match(gateOut) {
		t.Errorf("the gate printed no verdict:\n%s", gateOut)
	}
	if _, err := os.Stat(filepath.Join(report, "report.md")); err != nil {
		t.Errorf("the gate wrote no report: %v", err)
	}
	t.Logf("gate against the released host:\n%s", gateOut)
}

// checkReleaseAssets checks what release.sh made against what the workflow publishes: both
// archives, the installer and SHA256SUMS; each archive's files; binaries for the archive's
// architecture, static, -trimpath and stamped with the version; the same bytes when built twice.
func checkReleaseAssets(t *testing.T, assets string) {
	t.Helper()
	names := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		names["perf-gate-host-"+releaseVersion+"-linux-"+arch+".tar.gz"] = arch
	}
	sums, err := os.ReadFile(filepath.Join(assets, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		f := strings.Fields(line)
		body, err := os.ReadFile(filepath.Join(assets, f[1]))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", f[1], err)
		}
		if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != f[0] {
			t.Errorf("SHA256SUMS: %s does not match", f[1])
		}
		listed[f[1]] = true
	}
	for name := range names {
		if !listed[name] {
			t.Errorf("SHA256SUMS does not list %s:\n%s", name, sums)
		}
	}
	if !listed["install.sh"] || len(listed) != 3 {
		t.Errorf("SHA256SUMS should list the two archives and install.sh:\n%s", sums)
	}
	for name, arch := range names {
		dir := strings.TrimSuffix(name, ".tar.gz") + "/"
		files := untar(t, filepath.Join(assets, name))
		var got []string
		for f := range files {
			got = append(got, strings.TrimPrefix(f, dir))
		}
		slices.Sort(got)
		want := []string{"LICENSE", "README.md", "bin/arm-exec", "bin/loadgen", "bin/perf-host", "install.sh", "plan.schema.json",
			"systemd/perf-gate-cgroups.service", "systemd/perf-gate-champion.service", "systemd/perf-gate-gc.service", "systemd/perf-gate-gc.timer"}
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", name, got, want)
		}
		for _, bin := range []string{"bin/perf-host", "bin/loadgen", "bin/arm-exec"} {
			info, err := buildinfo.Read(bytes.NewReader(files[dir+bin]))
			if err != nil {
				t.Fatalf("%s %s: %v", name, bin, err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if settings["GOOS"] != "linux" || settings["GOARCH"] != arch || settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
				t.Errorf("%s %s was built with %v", name, bin, settings)
			}
			if !bytes.Contains(files[dir+bin], []byte(releaseVersion)) {
				t.Errorf("%s %s is not stamped with %s", name, bin, releaseVersion)
			}
		}
	}
	// Reproducible: the same source and version give the same archive (Go's cache makes this cheap).
	again := t.TempDir()
	if out, err := exec.Command("../release.sh", releaseVersion, again, runtime.GOARCH).CombinedOutput(); err != nil {
		t.Fatalf("release.sh again: %v\n%s", err, out)
	}
	for name, arch := range names {
		if arch != runtime.GOARCH {
			continue
		}
		a, _ := os.ReadFile(filepath.Join(assets, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of the same source", name)
		}
	}
}

// untar reads a .tar.gz into memory: regular files by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			files[hdr.Name], _ = io.ReadAll(tr)
		}
	}
}

// envWithoutGo is a minimal environment whose PATH holds no go, as on a host without Go.
func envWithoutGo(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "tar")); err == nil {
				t.Fatalf("go is in %s beside the system's tools: cannot hide it from install.sh", d)
			}
			continue
		}
		dirs = append(dirs, d)
	}
	env := []string{"PATH=" + strings.Join(dirs, string(filepath.ListSeparator)), "HOME=/root", "LANG=C.UTF-8"}
	probe := exec.Command("sh", "-c", "command -v go")
	probe.Env = env
	if out, err := probe.Output(); err == nil {
		t.Fatalf("go is still on the PATH: %s", out)
	}
	return env
}

// nodeAndCLI finds node and the committed perf-gate bundle (dist/cli.js), which run the gate.
func nodeAndCLI(t *testing.T) (string, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the gate runs the perf-gate CLI")
	}
	cli, _ := filepath.Abs("../../dist/cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the perf-gate bundle: %v (npm run build)", err)
	}
	return node, cli
}
