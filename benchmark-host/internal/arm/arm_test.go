package arm

import (
	"fmt"

	"crypto/rand"
	"encoding/hex"
	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testUser creates a user of the test's own (an arm's user must be used by that arm alone:
// Clear stops every process it runs).
func testUser(t *testing.T) Identity {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a user")
	}
	b := make([]byte, 3)
	rand.Read(b)
	name := "pgarm" + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Skipf("useradd: %v %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("pkill", "-9", "-u", name).Run() // the test's own user only
		exec.Command("userdel", name).Run()
	})
	id, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// scratch is a directory the arm's user can traverse.
func scratch(t *testing.T) string {
	dir, err := os.MkdirTemp("", "arm-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Without a cgroup, a dedicated user is the arm's boundary: Clear stops a process that left
// the service's session and ignores SIGTERM, and reads the arm's CPU from /proc meanwhile.
func TestClearStopsEveryProcessOfADedicatedUser(t *testing.T) {
	a := &Arm{Name: "challenger", User: testUser(t), Dedicated: true}
	cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'trap "" TERM HUP; while :; do :; done' & exec sleep 300`)
	if err := a.Launch(cmd); err != nil {
		t.Fatal(err)
	}
	a.Started(cmd.Process.Pid)
	go cmd.Wait()
	time.Sleep(300 * time.Millisecond)
	procs := a.Procs()
	u := a.Sample()
	if len(procs) != 2 || !u.OK || u.CPUUs == 0 {
		t.Fatalf("the arm runs %s, CPU %+v; want a sleep and a spinning shell, with CPU", Describe(procs), u)
	}
	if acc := a.Accounting(); !strings.Contains(acc.CPU, "/proc") || !strings.Contains(acc.Memory, a.User.Name) {
		t.Errorf("accounting %+v", acc)
	}
	if err := a.Clear(); err != nil {
		t.Fatal(err)
	}
	if left := OfUser(a.User.UID); len(left) > 0 {
		t.Errorf("after Clear the user still runs %s", Describe(left))
	}
}

// Install gives the arm a fresh copy of a release, written by its own user, and refuses a
// home directory that is not the arm's own and private.
func TestInstallCopiesTheReleaseAsTheArmsUser(t *testing.T) {
	id := testUser(t)
	dir := scratch(t)
	release := filepath.Join(dir, "release")
	os.MkdirAll(filepath.Join(release, "bin"), 0o755)
	os.WriteFile(filepath.Join(release, "bin", "server"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(release, "VERSION"), []byte("v1\n"), 0o644)
	os.Symlink("bin/server", filepath.Join(release, "start"))
	os.Chmod(release, 0o700) // as under releases/: the arm cannot read it itself
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Chown(home, int(id.UID), int(id.GID))
	a := &Arm{Name: "challenger", User: id, Dedicated: true, Home: home}
	for i, state := range []string{"fresh", "fresh", "persistent", "persistent", "fresh"} { // each over what the previous start wrote
		if err := a.Install(release, state); err != nil {
			t.Fatal(err)
		}
		stale := filepath.Join(a.WorkDir(), "stale")
		if _, err := os.Stat(stale); err == nil {
			t.Errorf("start %d: the previous copy was not replaced", i)
		}
		kept := filepath.Join(a.StateDir(), "data")
		_, err := os.Stat(kept)
		if wantKept := state == "persistent"; (err == nil) != wantKept {
			t.Errorf("start %d (%s): the previous start's STATE_DIR file kept: %v, want %v", i, state, err == nil, wantKept)
		}
		if fi, err := os.Stat(a.StateDir()); err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != id.UID {
			t.Errorf("start %d: STATE_DIR %v %v; want a 0700 directory of the arm's user", i, fi, err)
		}
		for _, f := range []string{stale, kept} {
			os.WriteFile(f, nil, 0o644)
			os.Chown(f, int(id.UID), int(id.GID))
		}
	}
	for name, want := range map[string]os.FileMode{"bin/server": 0o755, "VERSION": 0o644} {
		fi, err := os.Stat(filepath.Join(a.WorkDir(), name))
		if err != nil || fi.Mode().Perm() != want || fi.Sys().(*syscall.Stat_t).Uid != id.UID {
			t.Errorf("%s: %v (%v); want mode %v, owned by the arm's user", name, fi.Mode(), err, want)
		}
	}
	if link, err := os.Readlink(filepath.Join(a.WorkDir(), "start")); err != nil || link != "bin/server" {
		t.Errorf("the symlink: %q %v", link, err)
	}
	os.Chown(home, 0, 0)
	if err := a.Install(release, "fresh"); err == nil || !strings.Contains(err.Error(), "re-run install.sh") {
		t.Errorf("a home owned by another user: %v", err)
	}
}

// service.setup runs in the arm's fresh copy as its user with the service's environment;
// whatever it leaves running is stopped, a slow one is stopped at its timeout, and du reads
// what the arm wrote.
// installedArm is an arm of a user of the test's own with an empty build installed, in dir.
func installedArm(t *testing.T, name string, port int) (a *Arm, dir string) {
	id := testUser(t)
	dir = scratch(t)
	release := filepath.Join(dir, "release")
	os.MkdirAll(release, 0o755)
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Chown(home, int(id.UID), int(id.GID))
	a = &Arm{Name: name, User: id, Dedicated: true, Home: home, Port: port}
	if err := a.Install(release, "fresh"); err != nil {
		t.Fatal(err)
	}
	return a, dir
}

func TestSetupRunsAsTheArmAndLeavesNothingRunning(t *testing.T) {
	a, dir := installedArm(t, "champion", 18001)
	id := a.User
	log := service.Log{Path: filepath.Join(dir, "setup.log"), MaxBytes: 1 << 20}
	spec := contract.ServiceSpec{SetupTimeoutSeconds: 5, Env: map[string]string{"FIXTURE": "rows"},
		Setup: []string{"/bin/sh", "-c", `id -u; echo "$PORT $PORT_PEER $STATE_DIR $HOME $FIXTURE"; head -c 300000 /dev/zero > "$STATE_DIR/fixture"; sleep 300 &`}}
	took, err := a.Setup(spec, map[string]int{"peer": 18003}, log)
	out, _ := os.ReadFile(log.Path)
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	want := fmt.Sprintf("%d\n18001 18003 %s %s rows\n", id.UID, a.StateDir(), a.WorkDir())
	if !strings.HasSuffix(string(out), want) {
		t.Errorf("setup's output:\n%s\nwant it to end with\n%s", out, want)
	}
	if left := OfUser(id.UID); len(left) > 0 {
		t.Errorf("the setup left %s running", Describe(left))
	}
	t.Logf("setup took %v", took)
	work, state, err := a.DiskUsage()
	if err != nil || state < 300000 || work <= 0 {
		t.Errorf("disk usage: work %d, state %d, %v; want the 300,000-byte fixture in STATE_DIR", work, state, err)
	}

	spec.Setup, spec.SetupTimeoutSeconds = []string{"/bin/sleep", "30"}, 0.3
	start := time.Now()
	if _, err := a.Setup(spec, nil, log); err == nil || !strings.Contains(err.Error(), "setup_timeout_seconds 0.3") || time.Since(start) > 10*time.Second {
		t.Errorf("a setup past its timeout: %v after %v", err, time.Since(start))
	}
	spec.Setup = []string{"/bin/sh", "-c", "exit 3"}
	if _, err := a.Setup(spec, nil, log); err == nil || err.Error() != "exit status 3" {
		t.Errorf("a failing setup: %v", err)
	}
	if left := OfUser(id.UID); len(left) > 0 {
		t.Errorf("after the timeout %s still runs", Describe(left))
	}
}

// An arm's programs start through arm-exec when the host gives them mounts of their own; where
// it cannot, CheckPrivate says why: arm-exec missing, or a home the programs would not see.
func TestCheckPrivateStartsThroughArmExecOrSaysWhyNot(t *testing.T) {
	id := testUser(t)
	dir, exe := sshtest.ArmExec(t)
	arm := func(home string, exe string) *Arm {
		os.Mkdir(home, 0o700)
		os.Chown(home, int(id.UID), int(id.GID))
		a := &Arm{Name: "challenger", User: id, Dedicated: true, Home: home}
		a.Private = &armns.Spec{Exec: exe, Mounts: true, Tmp: a.TmpDir(), UID: id.UID, GID: id.GID}
		return a
	}
	if err := arm(filepath.Join(dir, "home"), exe).CheckPrivate(); err != nil {
		t.Errorf("a home outside the shared directories, arm-exec installed: %v", err)
	}
	if err := arm(filepath.Join(dir, "home"), filepath.Join(dir, "missing")).CheckPrivate(); err == nil || !strings.Contains(err.Error(), "install.sh installs arm-exec") {
		t.Errorf("arm-exec missing: %v", err)
	}
	if err := arm(filepath.Join(scratch(t), "home"), exe).CheckPrivate(); err == nil || !strings.Contains(err.Error(), "--root elsewhere") {
		t.Errorf("a home under /tmp: %v", err)
	}
	// Through arm-exec for the abstract-socket scope alone, the home is the host's view anyway.
	if armns.LandlockABI() >= armns.ScopeABI {
		a := arm(filepath.Join(scratch(t), "home"), exe)
		a.Private.Mounts, a.Private.ScopeSockets = false, true
		if err := a.CheckPrivate(); err != nil {
			t.Errorf("a home under /tmp, the scope alone: %v", err)
		}
	}
	// The arm's service sees its home's tmp as /tmp; perf-host's own work in the arm does not.
	a := arm(filepath.Join(dir, "home"), exe)
	for _, launch := range []func(*exec.Cmd) error{a.launchProgram, a.Launch} {
		cmd := exec.Command("/bin/sh", "-c", "echo x > /tmp/"+id.Name)
		cmd.Dir = a.Home
		if err := a.runBounded(launch, cmd, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(a.TmpDir(), id.Name)); err != nil {
		t.Errorf("the program's /tmp was not the arm's: %v", err)
	}
	if _, err := os.Stat("/tmp/" + id.Name); err != nil {
		t.Errorf("perf-host's own work in the arm did not see the host's /tmp: %v", err)
	}
	os.Remove("/tmp/" + id.Name)
}

// Two arms of one user (a host without users of their own, or local mode): clearing one must
// not take the exit of a program the other started and is about to wait for. Reaping it first
// failed that Wait with "waitid: no child processes", and a setup that had succeeded failed
// its arm. A zombie nobody waits for (an orphan the host adopted) is still reaped.
func TestClearingOneArmLeavesTheOtherArmsExitToItsWait(t *testing.T) {
	id := testUser(t)
	champion := &Arm{Name: "champion", User: id}
	challenger := &Arm{Name: "challenger", User: id}
	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	if err := champion.Launch(cmd); err != nil {
		t.Fatal(err)
	}
	// A child of the test of the same user that nobody waits for, as an adopted orphan is.
	orphan := exec.Command("/bin/true")
	orphan.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: []uint32{}}}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	orphanPid := orphan.Process.Pid
	zombie := func(pid int) bool {
		p, err := ReadProc(pid)
		return err == nil && p.State == 'Z'
	}
	for deadline := time.Now().Add(5 * time.Second); !(zombie(cmd.Process.Pid) && zombie(orphanPid)); {
		if time.Now().After(deadline) {
			t.Fatal("the two children did not exit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := challenger.Clear(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || err.Error() != "exit status 3" {
		t.Errorf("the champion's program's Wait: %v, want exit status 3", err)
	}
	if _, err := ReadProc(orphanPid); err == nil {
		t.Errorf("the zombie nobody waits for (pid %d) was left", orphanPid)
	}
}
