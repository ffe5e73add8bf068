package arm

import (
	"crypto/rand"
	"encoding/hex"
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
	for range 2 { // the second over a copy the arm has written to
		if err := a.Install(release); err != nil {
			t.Fatal(err)
		}
		stale := filepath.Join(a.WorkDir(), "stale")
		if _, err := os.Stat(stale); err == nil {
			t.Errorf("the previous copy was not replaced")
		}
		os.WriteFile(stale, nil, 0o644)
		os.Chown(stale, int(id.UID), int(id.GID))
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
	if err := a.Install(release); err == nil || !strings.Contains(err.Error(), "re-run install.sh") {
		t.Errorf("a home owned by another user: %v", err)
	}
}
