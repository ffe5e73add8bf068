package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image/imagetest"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// What every user of a Linux host shares unless something keeps it apart: the world-writable
// directories (/tmp, /var/tmp, /dev/shm), SysV IPC, and the CPUs. Hostile challengers through
// the real install try each: to fill the host's disk or memory past their own limits, to read
// what the champion left there and leave something for it, to leave memory behind after their
// run, and to burn the load generator's CPU while the champion is measured.
func TestChallengerCannotUseWhatTheHostsUsersShare(t *testing.T) {
	const diskBytes, memoryBytes = 128 << 20, 256 << 20
	h := crossArmHost(t, "--arm-disk-bytes", strconv.Itoa(diskBytes), "--arm-memory-bytes", strconv.Itoa(memoryBytes))
	challenger, err := arm.Lookup(h.challengerUser)
	if err != nil {
		t.Fatal(err)
	}
	champion, _ := arm.Lookup(h.championUser)
	uid := strconv.Itoa(int(challenger.UID))
	// Whatever the attacks leave on the host's own /tmp, /var/tmp, /dev/shm and SysV IPC goes
	// with the test (the hostile program names all of it after its user).
	t.Cleanup(func() {
		for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
			os.RemoveAll(filepath.Join(dir, "hostile-"+uid))
			for _, u := range []arm.Identity{challenger, champion} {
				os.Remove(fmt.Sprintf("%s/hostile-left-by-%d", dir, u.UID))
			}
			for _, u := range []arm.Identity{challenger, champion} {
				os.Remove(fmt.Sprintf("%s/hostile-plant-%d", dir, u.UID))
			}
		}
		removeSysVSegments(challenger.UID, champion.UID)
		for _, u := range []arm.Identity{challenger, champion} {
			os.Remove(fmt.Sprintf("/tmp/redis-%d.sock", u.UID))
		}
	})
	onHost := func(path string) int64 {
		n, _ := dirBytes(path)
		return n
	}
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	t.Logf("private mounts: %s", st.Isolation.PrivateMounts)
	if !strings.HasPrefix(st.Isolation.PrivateMounts, "arm-exec:") {
		t.Errorf("status says the arms' programs have no mounts of their own: %q %q", st.Isolation.PrivateMounts, st.Isolation.Notes)
	}
	// Abstract unix sockets are scoped where the kernel's Landlock can (Linux 6.12); elsewhere
	// they are shared, status says so, and the challenger reads them
	// (docs/design/0034-abstract-sockets-scoped.md).
	socketsScoped := armns.LandlockABI() >= armns.ScopeABI
	if said := strings.Contains(st.Isolation.PrivateMounts, "abstract unix sockets: each program reaches only its own"); said != socketsScoped {
		t.Errorf("status says abstract unix sockets scoped %v on a kernel of Landlock ABI %d: %q", said, armns.LandlockABI(), st.Isolation.PrivateMounts)
	}

	t.Run("fills the host's disk through /tmp", func(t *testing.T) {
		c := h.crossArmRun(t, "tmpfill", `(sleep 2.5; exec ./hostile fill /tmp/hostile-$(id -u) 256) & exec ./service`, 10)
		t.Logf("challenger log: %s", c.log)
		// The arm may be stopped for its full disk before the fill says how far it got.
		if !strings.Contains(c.log, "fill: wrote") && c.r.Outcome.ErrorKind != "challenger_out_of_disk" {
			t.Fatalf("the fill never ran:\n%s", c.log)
		}
		if n := onHost("/tmp/hostile-" + uid); n > 0 {
			t.Errorf("the challenger wrote %d MiB into the host's /tmp", n>>20)
		}
		if c.r.Outcome.ErrorKind != "challenger_out_of_disk" || !strings.Contains(c.r.Outcome.Message, "challenger: out of its 128 MiB of disk") {
			t.Errorf("outcome %+v\n%s", c.r.Outcome, c.progress)
		}
		if len(c.r.Slices) == 0 {
			t.Errorf("the run's measurements up to the fill were not kept")
		}
		if f := finding(c.r.Preflight, "arm_private_mounts"); f.Status != contract.FindingOK || !strings.HasPrefix(f.Detail, "arm-exec:") {
			t.Errorf("pre-flight arm_private_mounts: %+v", f)
		}
		h.afterwards(t, "tmpfill")
	})

	t.Run("fills the host's memory through /dev/shm", func(t *testing.T) {
		c := h.crossArmRun(t, "shmfill", `(sleep 2.5; exec ./hostile fill /dev/shm/hostile-$(id -u) 512) & exec ./service`, 10)
		t.Logf("challenger log: %s", c.log)
		if n := onHost("/dev/shm/hostile-" + uid); n > 0 {
			t.Errorf("the challenger left %d MiB in the host's /dev/shm (its memory)", n>>20)
		}
		// Its /dev/shm is its own memory: the pages count against its limit, which ends it.
		if strings.Contains(c.log, "fill: wrote 512 MiB") {
			t.Errorf("the challenger wrote 512 MiB into /dev/shm beside a memory limit of 256 MiB:\n%s", c.log)
		}
		if c.r.Outcome.ErrorKind != "challenger_out_of_memory" || !strings.Contains(c.r.Outcome.Message, "killed for memory: over its memory limit") {
			t.Errorf("outcome %+v\n%s", c.r.Outcome, c.progress)
		}
		h.afterwards(t, "shmfill")
	})

	t.Run("reads and leaves files where the champion keeps its own", func(t *testing.T) {
		h.must(buildTarball(t, "fast", "v1", "./hostile plant & exec ./service"), "deploy champion bbbbbbb")
		h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote bbbbbbb")
		defer h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote aaaaaaa")
		serveHostSecret(t)
		c := h.crossArmRun(t, "peek", "./hostile peek & exec ./service", 4)
		champ, _ := os.ReadFile(filepath.Join(h.root, "runs", "peek", "champion.log"))
		t.Logf("champion log: %s\nchallenger log: %s", champ, c.log)
		if !strings.Contains(c.log, "peek: left a file") || !strings.Contains(string(champ), "plant: /tmp/hostile-plant-"+strconv.Itoa(int(champion.UID))+": <nil>") {
			t.Fatalf("the plant or the peek never ran")
		}
		// Both abstract sockets were found (the champion's and the host's), and neither answered.
		if !strings.Contains(c.log, "peek: 2 abstract sockets planted") {
			t.Errorf("the challenger did not find the champion's and the host's abstract sockets")
		}
		for _, line := range secretsRead(c.log, socketsScoped) {
			t.Errorf("the challenger read what the champion or the host left: %s", line)
		}
		for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
			if _, err := os.Stat(fmt.Sprintf("%s/hostile-left-by-%d", dir, challenger.UID)); err == nil {
				t.Errorf("the challenger left a file in the host's %s, where the champion looks", dir)
			}
		}
		if c.r.Outcome.Status != contract.StatusOK {
			t.Errorf("outcome %+v", c.r.Outcome)
		}
	})

	t.Run("a container image fills its /dev/shm and /tmp and looks for the champion's secrets", func(t *testing.T) {
		if _, err := image.Runc(); err != nil {
			t.Skip(err)
		}
		// One service spec for both arms: the champion is an image too, which plants.
		h.must(hostileImage(t, "plant"), "deploy champion ccccccc")
		h.must([]byte(imageSpec), "promote ccccccc")
		defer h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote aaaaaaa")
		// runc gives the container its own mounts: /dev/shm of 64 MiB, /tmp in its root
		// filesystem, which is on the arm's own disk. It shares the host's network, and so its
		// abstract unix sockets.
		serveHostSecret(t)
		c := h.crossArmRunBuild(t, "img-shm", hostileImage(t, "peek", "--", "fill", "/dev/shm/hostile", "128"), imageSpec, 4)
		t.Logf("challenger log: %s", c.log)
		if !strings.Contains(c.log, "peek: left a file") || !strings.Contains(c.log, "fill: wrote") {
			t.Fatalf("the attacks never ran")
		}
		if !strings.Contains(c.log, "peek: 2 abstract sockets planted") {
			t.Errorf("the container did not find the champion's and the host's abstract sockets")
		}
		if read := secretsRead(c.log, socketsScoped); len(read) > 0 || strings.Contains(c.log, "fill: wrote 128 MiB") {
			t.Errorf("the container read the champion's or the host's secrets (%q), or filled more than its /dev/shm", read)
		}
		if c.r.Outcome.Status != contract.StatusOK {
			t.Errorf("outcome %+v\n%s", c.r.Outcome, c.progress)
		}
		c = h.crossArmRunBuild(t, "img-tmp", hostileImage(t, "fill", "/tmp/hostile", "256"), imageSpec, 10)
		if n := onHost("/tmp/hostile"); n > 0 || c.r.Outcome.ErrorKind != "challenger_out_of_disk" {
			t.Errorf("outcome %+v (the host's /tmp/hostile holds %d bytes)\n%s", c.r.Outcome, n, c.log)
		}
	})

	t.Run("a dependency shares the arm's own /tmp with its service", func(t *testing.T) {
		const redis = "/usr/bin/redis-server"
		if _, err := os.Stat(redis); err != nil {
			t.Skip(err)
		}
		// Redis puts its unix socket in /tmp, which the service lists: the arm's programs share
		// the arm's /tmp, and the host's never sees it.
		sock := "/tmp/redis-" + uid + ".sock"
		spec := strings.Replace(serviceSpec, `{`, `{"dependencies":[{"name":"redis","command":["`+redis+`","--port","$PORT_REDIS","--bind","127.0.0.1","--unixsocket","`+sock+`","--save","","--appendonly","no","--dir","$STATE_DIR"],"ready":{"tcp":"PORT_REDIS"}}],`, 1)
		c := h.crossArmRunBuild(t, "deps", buildTarball(t, "fast", "v1", "ls /tmp; exec ./service"), spec, 3)
		if c.r.Outcome.Status != contract.StatusOK || !strings.Contains(c.log, filepath.Base(sock)) {
			t.Errorf("outcome %+v; the service did not see the dependency's socket in its /tmp:\n%s", c.r.Outcome, c.log)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("the dependency's socket is in the host's /tmp")
		}
	})

	t.Run("leaves SysV shared memory behind", func(t *testing.T) {
		c := h.crossArmRun(t, "sysv", "(sleep 1; ./hostile sysv 64) & exec ./service", 4)
		t.Logf("challenger log: %s", c.log)
		if !strings.Contains(c.log, "sysv: left") {
			t.Fatalf("the attack never ran")
		}
		if n, bytes := sysVSegments(challenger.UID); n > 0 {
			t.Errorf("after the run, %d SysV segments of the challenger (%d MiB) are left on the host", n, bytes>>20)
		}
		h.afterwards(t, "sysv")
	})

	t.Run("burns the load generator's CPU while the champion is measured", func(t *testing.T) {
		online, _ := placement.Online()
		if len(online) < 2 {
			t.Skip("one CPU: the load generator has none of its own")
		}
		c := h.crossArmRun(t, "pin", fmt.Sprintf("./hostile pin %d 0.2 & exec ./service", online[0]), 12)
		disturbed := 0
		for _, s := range c.r.Slices {
			if !s.Valid {
				disturbed++
			}
		}
		t.Logf("challenger log: %s; %d of %d slices invalid", lastLine(c.log), disturbed, len(c.r.Slices))
		if !strings.Contains(c.log, "pin: onto CPU") {
			t.Fatalf("the attack never ran:\n%s", c.log)
		}
		if strings.Contains(c.log, "pin: onto CPU "+strconv.Itoa(online[0])+": ok") {
			t.Errorf("the challenger ran on the load generator's CPU %d", online[0])
		}
		h.afterwards(t, "pin")
	})
}

var (
	staticHostileOnce sync.Once
	staticHostile     string
	staticHostileErr  error
)

// secretsRead are the secrets the hostile peek read (its "peek: READ" lines) that it should not
// have: every one, but an abstract socket's where the kernel cannot scope them
// (docs/design/0034-abstract-sockets-scoped.md).
func secretsRead(log string, socketsScoped bool) []string {
	var read []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "peek: READ") && (socketsScoped || !strings.Contains(line, "peek: READ abstract socket")) {
			read = append(read, line)
		}
	}
	return read
}

// serveHostSecret is a service of the host's on an abstract unix socket, named as the hostile
// program's plant names its own, which answers the secret to whoever connects.
func serveHostSecret(t *testing.T) {
	sshtest.Serve(t, "unix", "@hostile-plant-host", "the host's secret")
}

// hostileImage is a FROM scratch image of the example service with the hostile program beside
// it (static builds of both), which starts attack ("MODE ARGS [-- MODE ARGS…]") and then the
// service: a docker-archive, as deploy takes it.
func hostileImage(t *testing.T, attack ...string) []byte {
	t.Helper()
	staticHostileOnce.Do(func() {
		dir, err := buildFolder("hostile")
		if staticHostileErr = err; err != nil {
			return
		}
		staticHostile = filepath.Join(dir, "hostile")
		cmd := exec.Command("go", "build", "-o", staticHostile, "./hostile")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			staticHostileErr = fmt.Errorf("go build hostile: %v\n%s", err, out)
		}
	})
	if staticHostileErr != nil {
		t.Fatal(staticHostileErr)
	}
	var layers []v1.Layer
	for file, path := range map[string]string{staticService(t, "fast"): "app/server", staticHostile: "app/hostile"} {
		l, err := imagetest.LayerFromFile(file, path)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	cfg := v1.Config{WorkingDir: "/app", Env: []string{"PATH=/app", "GOMAXPROCS=2"},
		Entrypoint: append([]string{"/app/hostile", "beside", "/app/server", "--"}, attack...)}
	img, err := imagetest.Build(layers, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return dockerSave(t, img)
}

// finding is the pre-flight finding of check, or a zero one.
func finding(findings []contract.Finding, check string) contract.Finding {
	for _, f := range findings {
		if f.Check == check {
			return f
		}
	}
	return contract.Finding{}
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return err
	})
	return n, err
}

// sysVSegments counts the host's SysV shared memory segments of uid, and their size.
func sysVSegments(uid uint32) (n int, bytes int64) {
	for _, f := range sysVShm() {
		if f[7] == strconv.Itoa(int(uid)) {
			n++
			bytes += atoi(f[3])
		}
	}
	return n, bytes
}

// removeSysVSegments removes the host's SysV shared memory segments of the uids.
func removeSysVSegments(uids ...uint32) {
	for _, f := range sysVShm() {
		for _, uid := range uids {
			if f[7] == strconv.Itoa(int(uid)) {
				id, _ := strconv.Atoi(f[1])
				unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			}
		}
	}
}

// sysVShm is /proc/sysvipc/shm, a row of fields per segment (key shmid perms size cpid lpid
// nattch uid …).
func sysVShm() [][]string {
	b, _ := os.ReadFile("/proc/sysvipc/shm")
	var out [][]string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 8 {
			out = append(out, f)
		}
	}
	return out
}
