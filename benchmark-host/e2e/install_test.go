package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// installedHost is a host as an install.sh sets it up for real: the three users it creates and
// its cgroup subtree (named for this test, so concurrent runs never collide), perf-host under a
// scratch prefix with its state under a scratch root, and a real sshd that reads the CI user's
// authorized_keys.
type installedHost struct {
	t                                    *testing.T
	dir, root, prefix                    string
	ciUser, championUser, challengerUser string
	cgroupName, cgroup                   string // cgroup: the subtree ("" without cgroup v2)
	championPort, challengerPort         int
	sshPort                              int
	key, knownHosts                      string
}

func newInstalledHost(t *testing.T) *installedHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("install.sh needs root (as in CI)")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	// Not under /tmp: each arm's programs see a /tmp of their own, where the arm's home, which
	// lies under the root, would be out of their sight (install.sh refuses such a root).
	dir, err := os.MkdirTemp("/var/lib", "perf-gate-install-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	h := &installedHost{t: t, dir: dir, root: filepath.Join(dir, "root"), prefix: filepath.Join(dir, "prefix"),
		ciUser: "pgci" + id, championUser: "pgch" + id, challengerUser: "pgcl" + id, cgroupName: "perf-gate-test-" + id,
		championPort: freePort(t), challengerPort: freePort(t), sshPort: freePort(t),
		key: filepath.Join(dir, "id"), knownHosts: filepath.Join(dir, "known")}
	if mount := cgroup.Mount(); mount != "" {
		h.cgroup = filepath.Join(mount, h.cgroupName)
	}
	t.Cleanup(func() {
		for _, u := range []string{h.ciUser, h.championUser, h.challengerUser} {
			exec.Command("pkill", "-9", "-u", u).Run() // the test's own users only
		}
		sshtest.KillUnder(h.root)
		sshtest.RemoveCgroup(h.cgroup)
		for _, c := range cgroup.V1Controllers { // a hybrid host's v1 subtrees
			sshtest.RemoveCgroup(filepath.Join("/sys/fs/cgroup", c, h.cgroupName))
		}
		// The arms' own filesystems (loop mounts) and the packet filter's table.
		for _, a := range []string{"champion", "challenger"} {
			exec.Command("umount", filepath.Join(h.root, "arms", a)).Run()
		}
		exec.Command("nft", "delete", "table", "inet", strings.ReplaceAll(h.cgroupName, "-", "_")).Run()
		exec.Command("userdel", "-r", h.ciUser).Run()
		exec.Command("userdel", h.championUser).Run()
		exec.Command("userdel", h.challengerUser).Run()
		if t.Failed() {
			t.Logf("state kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", h.key)
	return h
}

// install runs an install.sh with the host's options after extra (the source: --release …),
// in env (nil: this process's).
func (h *installedHost) install(script string, env []string, extra ...string) (string, error) {
	pub, _ := os.ReadFile(h.key + ".pub")
	args := append(extra, "--ci-key", strings.TrimSpace(string(pub)), "--root", h.root, "--prefix", h.prefix,
		"--ci-user", h.ciUser, "--champion-user", h.championUser, "--challenger-user", h.challengerUser,
		"--champion-port", strconv.Itoa(h.championPort), "--challenger-port", strconv.Itoa(h.challengerPort),
		"--cgroup-name", h.cgroupName, "--no-systemd")
	cmd := exec.Command(script, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installHost is a host installed from this checkout's install.sh (with extra options), its
// sshd started; it returns install.sh's output too.
func installHost(t *testing.T, extra ...string) (*installedHost, string) {
	t.Helper()
	h := newInstalledHost(t)
	out, err := h.install("../install.sh", nil, extra...)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	h.startSSHD()
	return h, out
}

// startSSHD starts sshd on the host's port with its own host key, pinned in knownHosts.
func (h *installedHost) startSSHD() {
	t := h.t
	hostKey := filepath.Join(h.dir, "hostkey")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	writeFile(t, filepath.Join(h.dir, "sshd_config"), fmt.Sprintf(
		"Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n",
		h.sshPort, hostKey, filepath.Join(h.dir, "sshd.pid")))
	os.MkdirAll("/run/sshd", 0o755)
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(h.dir, "sshd_config"))
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sshd.Process.Kill(); sshd.Wait() })
	hostPub, _ := os.ReadFile(hostKey + ".pub")
	f := strings.Fields(string(hostPub))
	writeFile(t, h.knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s %s\n", h.sshPort, f[0], f[1]))
	waitPort(t, h.sshPort)
}

// sshCommand is the client command for one command as the CI key, through the forced command
// install.sh wrote.
func (h *installedHost) sshCommand(command string) *exec.Cmd {
	return exec.Command("ssh", "-i", h.key, "-p", strconv.Itoa(h.sshPort), "-o", "IdentitiesOnly=yes",
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+h.knownHosts,
		"-o", "LogLevel=ERROR", h.ciUser+"@127.0.0.1", command)
}

// ssh runs one command as the CI key; stdout and stderr together.
func (h *installedHost) ssh(stdin []byte, command string) (string, error) {
	cmd := h.sshCommand(command)
	cmd.Stdin = bytes.NewReader(stdin)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// call runs one command as the CI key, with stdout, stderr and the exit code apart.
func (h *installedHost) call(stdin []byte, command string) (stdout, stderr string, code int) {
	return runSSH(h.t, h.sshCommand(command), bytes.NewReader(stdin))
}

// must runs a command that has to succeed and returns its stdout.
func (h *installedHost) must(stdin []byte, command string) string {
	h.t.Helper()
	out, errs, code := h.call(stdin, command)
	if code != 0 {
		h.t.Fatalf("%q exited %d:\n%s%s", command, code, out, errs)
	}
	return out
}

// as runs a shell command as a user of the host; the error is its failure.
func as(user, command string) (string, error) {
	b, err := exec.Command("su", "-s", "/bin/sh", user, "-c", command).CombinedOutput()
	return string(b), err
}

// running is what a user runs now: its live processes (zombies are dead).
func running(t *testing.T, user string) []arm.Proc {
	t.Helper()
	id, err := arm.Lookup(user)
	if err != nil {
		t.Fatal(err)
	}
	return arm.OfUser(id.UID)
}

// The install script's least-privilege model, for real: a CI login that can run only
// perf-host; services (pull-request code) as one user per arm, neither able to write the
// state; perf-host runnable by the CI login alone, with its capabilities permitted only.
func TestInstallScriptSeparatesTheCIUserFromTheArms(t *testing.T) {
	h, out := installHost(t)
	if !strings.Contains(out, "restrict,command=") || !strings.Contains(out, "Pin this host key") || !strings.Contains(out, "isolation on this host") {
		t.Errorf("install.sh did not print the authorized_keys line, the isolation and the host key:\n%s", out)
	}
	for _, step := range []struct {
		stdin []byte
		cmd   string
	}{
		{buildTarball(t, "fast", "v1", "exec ./service"), "deploy champion aaaaaaa"},
		{[]byte(serviceSpec), "promote aaaaaaa"},
		{buildTarball(t, "slow", "v2", "exec ./service"), "deploy challenger bbbbbbb"},
		{[]byte(runPlan("bbbbbbb", 2, 0.6)), "run pr-3-bbbbbbb-1"},
	} {
		h.must(step.stdin, step.cmd)
	}
	// The run waits for a quiet host first, then starts both arms: look until they serve.
	for _, u := range []string{h.championUser, h.challengerUser} {
		procs := running(t, u)
		for deadline := time.Now().Add(15 * time.Second); (len(procs) != 1 || procs[0].Cmdline != "./service") && time.Now().Before(deadline); procs = running(t, u) {
			time.Sleep(100 * time.Millisecond)
		}
		if len(procs) != 1 || procs[0].Cmdline != "./service" {
			t.Errorf("%s runs %s; want its service alone", u, arm.Describe(procs))
		}
	}
	if out := h.must(nil, "wait pr-3-bbbbbbb-1"); !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("wait:\n%s", out)
	}
	if out, errs, code := h.call(nil, "id"); code == 0 || !strings.Contains(errs, "refused") {
		t.Errorf("the CI key ran something other than perf-host: %d %s %s", code, out, errs)
	}
	for _, u := range []string{h.championUser, h.challengerUser} {
		if _, err := as(u, "touch "+filepath.Join(h.root, "tampered")); err == nil {
			t.Errorf("%s can write the host's state", u)
		}
	}
	fi, err := os.Stat(filepath.Join(h.prefix, "perf-host"))
	if err != nil || fi.Mode().Perm() != 0o750 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("perf-host is %v (%v); want 0750, owned by root, group of the CI user", fi.Mode(), err)
	}
	if caps, _ := exec.Command("getcap", filepath.Join(h.prefix, "perf-host")).Output(); !strings.Contains(string(caps), "cap_dac_override,cap_kill,cap_setgid,cap_setuid,cap_net_admin=p") {
		t.Errorf("perf-host's capabilities: %q; want the five, permitted only", caps)
	}
}
