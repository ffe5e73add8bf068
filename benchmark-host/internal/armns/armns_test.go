package armns

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

const nobody = 65534

// A program started through arm-exec as an unprivileged user writes /tmp into the arm's own
// directory, has a /dev/shm of the size asked and IPC of its own, holds no capability and no
// supplementary group, gains nothing from a set-group-ID program of the host, and cannot uncover
// the host's /tmp, not even as root of a user namespace of its own.
func TestAProgramGetsMountsOfItsOwnAndNoWayBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a program as another user needs root (as in CI)")
	}
	dir, exe := sshtest.ArmExec(t)
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
	Spec{Exec: exe, Mounts: true, Tmp: filepath.Join(home, "tmp"), ShmBytes: 8 << 20, UID: nobody, GID: nobody}.Wrap(cmd)
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

// The host's abstract unix socket (a service of its own, or the other arm's) is out of reach of
// a program started through arm-exec with the scope, in namespaces of its own or, as a
// container runtime is, without; the program's own socket is not, for it and its children.
func TestAScopedProgramReachesOnlyItsOwnAbstractSockets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a program as another user needs root (as in CI)")
	}
	if abi := LandlockABI(); abi < ScopeABI {
		t.Skipf("the kernel's Landlock ABI is %d; scopes came with %d (Linux 6.12)", abi, ScopeABI)
	}
	dir, exe := sshtest.ArmExec(t)
	name := "perf-gate-armns-host-" + filepath.Base(dir)
	sshtest.Serve(t, "unix", "@"+name, "secret")
	dgram, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + name + "-dgram", Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dgram.Close()
	// Connects to the host's socket and sends a datagram to its other; then serves one of its
	// own, which its child connects to.
	script := `import socket, os, sys
def connect(addr):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(addr); return "connected " + repr(s.recv(16))
    except OSError as e:
        return e.strerror
def send(addr):
    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", addr); return "sent"
    except OSError as e:
        return e.strerror
print("host:", connect("\0" + sys.argv[1]))
print("host datagram:", send("\0" + sys.argv[1] + "-dgram"))
own = socket.socket(socket.AF_UNIX); own.bind("\0" + sys.argv[1] + "-own"); own.listen()
sys.stdout.flush()
if os.fork() == 0:
    print("child to own:", connect("\0" + sys.argv[1] + "-own")); sys.stdout.flush(); os._exit(0)
c, _ = own.accept(); c.send(b"mine"); c.close(); os.wait()
print([l for l in open("/proc/self/status") if l.startswith("NoNewPrivs")][0].strip())`
	os.Mkdir(filepath.Join(dir, "arm"), 0o700)
	os.Chown(filepath.Join(dir, "arm"), nobody, nobody)
	scoped := Spec{Exec: exe, Mounts: true, Tmp: filepath.Join(dir, "arm", "tmp"), ShmBytes: 8 << 20, UID: nobody, GID: nobody, ScopeSockets: true}
	scopeOnly, unscoped := scoped, scoped
	scopeOnly.Mounts = false
	unscoped.Mounts, unscoped.ScopeSockets = false, false
	scoping := []string{"host: Operation not permitted", "host datagram: Operation not permitted", "child to own: connected b'mine'", "NoNewPrivs:\t1"}
	for _, c := range []struct {
		name string
		wrap func(*exec.Cmd)
		want []string
	}{
		{"in namespaces", scoped.Wrap, scoping},
		{"without namespaces (a host that cannot give them)", scopeOnly.Wrap, scoping},
		{"a container runtime", scoped.WrapScopeOnly, scoping},
		// The control: started directly, the same program reaches the host's sockets.
		{"neither", unscoped.Wrap, []string{"host: connected b'secret'", "host datagram: sent", "NoNewPrivs:\t0"}},
	} {
		cmd := exec.Command("/usr/bin/python3", "-c", script, name)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		c.wrap(cmd)
		out, err := cmd.CombinedOutput()
		t.Logf("%s: %v %s", c.name, cmd.Args[:2], out)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, want := range c.want {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: want %q", c.name, want)
			}
		}
	}
}

func TestArmExecReadsItsCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want entry
		err  string
	}{
		{[]string{"--tmp", "/a", "--shm-bytes", "8", "--", "/bin/x", "x", "-v"}, entry{tmp: "/a", shm: 8, path: "/bin/x", argv: []string{"x", "-v"}}, ""},
		{[]string{"--tmp", "/a", "--shm-bytes", "0", "--scope-abstract-sockets", "--", "/bin/x", "x"}, entry{tmp: "/a", scope: true, path: "/bin/x", argv: []string{"x"}}, ""},
		{[]string{"--scope-abstract-sockets", "--", "/usr/sbin/runc", "runc", "run"}, entry{scope: true, path: "/usr/sbin/runc", argv: []string{"runc", "run"}}, ""},
		{[]string{"--", "/bin/x", "x"}, entry{}, "usage"},                                                    // nothing asked
		{[]string{"--tmp", "/a", "--", "/bin/x", "x"}, entry{}, "usage"},                                     // no size
		{[]string{"--tmp", "/a", "--shm-bytes", "-1", "--", "/bin/x", "x"}, entry{}, `"--shm-bytes": usage`}, // a value is no flag
		{[]string{"--tmp", "/a", "--shm-bytes", "+8", "--", "/bin/x", "x"}, entry{}, "--shm-bytes: a size in bytes"},
		{[]string{"--tmp", "a", "--shm-bytes", "8", "--", "/bin/x", "x"}, entry{}, `--tmp: an absolute path, not "a"`},
		{[]string{"--tmp", "--scope-abstract-sockets", "--", "/bin/x", "x"}, entry{}, `"--tmp": usage`}, // the flag is not its value
		{[]string{"--scope-abstract-sockets", "--scope-abstract-sockets", "--", "/bin/x", "x"}, entry{}, "given twice"},
		{[]string{"--tmp", "/a", "--shm-bytes", "8", "/bin/x", "x"}, entry{}, `"/bin/x": usage`},    // no --
		{[]string{"--scope-abstract-sockets", "--", "/bin/x"}, entry{}, "usage"},                    // no argv0
		{[]string{"--tmp", "", "--shm-bytes", "8", "--", "/bin/x", "x"}, entry{}, `"--tmp": usage`}, // empty dir
	} {
		got, err := parseEntry(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %+v %v, want %+v", c.args, got, err, c.want)
		}
	}
}
