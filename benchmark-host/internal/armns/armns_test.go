package armns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A program started through arm-exec as an unprivileged user writes /tmp into the arm's own
// directory, has a /dev/shm of the size asked and IPC of its own, holds no capability and no
// supplementary group, gains nothing from a set-group-ID program of the host, and cannot uncover
// the host's /tmp, not even as root of a user namespace of its own.
func TestAProgramGetsMountsOfItsOwnAndNoWayBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a program as another user needs root (as in CI)")
	}
	dir, _ := os.MkdirTemp("", "perf-gate-armns-")
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe := filepath.Join(dir, "arm-exec")
	if out, err := exec.Command("go", "build", "-o", exe, "../../cmd/arm-exec").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const nobody = 65534
	home := filepath.Join(dir, "arm")
	os.Mkdir(home, 0o700)
	os.Chown(home, nobody, nobody)
	hostFile := filepath.Join("/tmp", filepath.Base(dir)+"-host")
	os.WriteFile(hostFile, []byte("the host's"), 0o644)
	t.Cleanup(func() { os.Remove(hostFile) })

	// As root of a namespace of its own, the program tries to lift the mount off /tmp.
	umount2 := `import ctypes, os
r = ctypes.CDLL(None, use_errno=True).umount2(b"/tmp", 2)
print("umount2", r, os.strerror(ctypes.get_errno()), os.listdir("/tmp"))`
	script := `echo mine > /tmp/written-by-arm; echo shm > /dev/shm/x
ls /tmp; echo ---
grep -E '^(CapInh|CapEff|CapPrm|CapAmb|Groups):' /proc/self/status
grep -E ' /dev/shm | /tmp ' /proc/self/mountinfo
chage -l nobody 2>&1 | head -1
wc -l < /proc/sysvipc/shm
unshare -Urm python3 -c "$UMOUNT2" 2>&1`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "UMOUNT2=" + umount2}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	Spec{Exec: exe, Tmp: filepath.Join(home, "tmp"), ShmBytes: 8 << 20, UID: nobody, GID: nobody}.Wrap(cmd)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
	got := string(out)
	if b, err := os.ReadFile(filepath.Join(home, "tmp", "written-by-arm")); err != nil || string(b) != "mine\n" {
		t.Errorf("/tmp was not the arm's directory: %q %v", b, err)
	}
	if _, err := os.Stat("/tmp/written-by-arm"); err == nil {
		os.Remove("/tmp/written-by-arm")
		t.Errorf("the program wrote the host's /tmp")
	}
	if strings.Contains(got, filepath.Base(hostFile)) {
		t.Errorf("the program saw the host's /tmp")
	}
	// chage is set-group-ID shadow, which reads /etc/shadow outside; the group is not mapped.
	for _, want := range []string{"chage: cannot open /etc/shadow", "CapInh:\t0000000000000000", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapAmb:\t0000000000000000", "Groups:\t \n", "size=8192k", "\n1\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the program's view", want)
		}
	}
	if after := got[strings.LastIndex(got, "\n1\n")+3:]; !strings.Contains(after, "umount2 -1") || !strings.Contains(after, "written-by-arm") {
		t.Errorf("root of a user namespace of its own uncovered something else than the arm's /tmp: %q", after)
	}
}
