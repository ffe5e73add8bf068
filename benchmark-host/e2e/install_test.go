package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// installedHost is a host as an install.sh sets it up for real (sshtest.Installed: the three
// users it creates and its cgroup subtree, named for this test so that concurrent runs never
// collide, perf-host under a scratch prefix with its state under a scratch root, and a real sshd
// that reads the CI user's authorized_keys), with the test's helpers.
type installedHost struct {
	t                                    *testing.T
	inst                                 *sshtest.Installed
	dir, root, prefix                    string
	ciUser, championUser, challengerUser string
	cgroupName, cgroup                   string // cgroup: the subtree ("" without cgroup v2)
	championPort, challengerPort         int
	sshPort                              int
	key, knownHosts                      string
	installOutput                        string // what install.sh printed (installHost)
}

func newInstalledHost(t *testing.T) *installedHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("install.sh needs root (as in CI)")
	}
	inst, err := sshtest.NewInstalled("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inst.Remove(t.Failed())
		if t.Failed() {
			t.Logf("state kept in %s", inst.Dir)
		}
	})
	return &installedHost{t: t, inst: inst, dir: inst.Dir, root: inst.Root, prefix: inst.Prefix,
		ciUser: inst.CIUser, championUser: inst.ChampionUser, challengerUser: inst.ChallengerUser, cgroupName: inst.CgroupName, cgroup: inst.Cgroup,
		championPort: inst.ChampionPort, challengerPort: inst.ChallengerPort, sshPort: inst.SSHPort, key: inst.Key, knownHosts: inst.KnownHosts}
}

// install runs an install.sh with the host's options after extra (the source: --release …),
// in env (nil: this process's).
func (h *installedHost) install(script string, env []string, extra ...string) (string, error) {
	return h.inst.Install(script, env, extra...)
}

// sharedMachine is the install option of a host that shares its machine with other tests, as
// sshtest's hosts do: the tests' runs do not wait up to 30 s for a quiet host, nor flag slices
// for other work's CPU; what they check is the host's behaviour, and a test that measures says
// so itself when the machine is too busy (internal/toobusy).
var sharedMachine = []string{"--max-foreign-cores", "64"}

// installHost is a host installed from this checkout's install.sh (with extra options), its
// sshd started; it returns install.sh's output too.
func installHost(t *testing.T, extra ...string) (*installedHost, string) {
	t.Helper()
	h := newInstalledHost(t)
	out, err := h.install("../install.sh", nil, append(slices.Clone(sharedMachine), extra...)...)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	h.startSSHD()
	h.installOutput = out
	return h, out
}

// startSSHD starts sshd on the host's port with its own host key, pinned in knownHosts.
func (h *installedHost) startSSHD() {
	if err := h.inst.StartSSHD(); err != nil {
		h.t.Fatal(err)
	}
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
	t.Parallel()
	limits := []string{"--max-idle-arm-cores", "0.5", "--max-run-seconds", "600", "--max-arm-log-bytes", "1048576"}
	h, out := installHost(t, limits...)
	if !strings.Contains(out, "restrict,command=") || !strings.Contains(out, "Pin this host key") || !strings.Contains(out, "isolation on this host") {
		t.Errorf("install.sh did not print the authorized_keys line, the isolation and the host key:\n%s", out)
	}
	// The host's limits given to install.sh are the forced command's (a plan over them is refused, below).
	for i := 0; i < len(limits); i += 2 {
		if !strings.Contains(out, limits[i]+" "+limits[i+1]) {
			t.Errorf("the forced command lacks %s %s:\n%s", limits[i], limits[i+1], out)
		}
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
	// Both arms serve from the first slice on, however long the run first waited for the host.
	w := follow(t, h.sshCommand("wait pr-3-bbbbbbb-1"), "slice 1/4")
	for _, u := range []string{h.championUser, h.challengerUser} {
		if procs := running(t, u); len(procs) != 1 || procs[0].Cmdline != "./service" {
			t.Errorf("%s runs %s; want its service alone", u, arm.Describe(procs))
		}
	}
	if out, err := w.finish(); err != nil || !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("wait: %v\n%s", err, out)
	}
	if _, errs, code := h.call([]byte(runPlan("bbbbbbb", 1000, 0.5)), "run pr-3-bbbbbbb-2"); code != 2 || !strings.Contains(errs, "over this host's --max-run-seconds 600") {
		t.Errorf("a 1000 s plan on a host of --max-run-seconds 600: exit %d, %s", code, errs)
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
	if caps, _ := exec.Command("getcap", filepath.Join(h.prefix, "perf-host")).Output(); !strings.Contains(string(caps), "cap_dac_override,cap_kill,cap_setgid,cap_setuid,cap_net_admin,cap_sys_ptrace,cap_perfmon=p") {
		t.Errorf("perf-host's capabilities: %q; want the five, permitted only", caps)
	}
}
