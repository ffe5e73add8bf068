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
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// installedHost is a host as an install.sh sets it up for real: the two users it creates (named
// for this test, so concurrent runs never collide), perf-host under a scratch prefix with its
// state under a scratch root, and a real sshd that reads the CI user's authorized_keys.
type installedHost struct {
	t                            *testing.T
	dir, root, prefix            string
	ciUser, svcUser              string
	championPort, challengerPort int
	sshPort                      int
	key, knownHosts              string
}

func newInstalledHost(t *testing.T) *installedHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("install.sh needs root (as in CI)")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	dir, _ := os.MkdirTemp("", "perf-gate-install-")
	os.Chmod(dir, 0o755)
	h := &installedHost{t: t, dir: dir, root: filepath.Join(dir, "root"), prefix: filepath.Join(dir, "prefix"),
		ciUser: "pgci" + hex.EncodeToString(suffix), svcUser: "pgsvc" + hex.EncodeToString(suffix),
		championPort: freePort(t), challengerPort: freePort(t), sshPort: freePort(t),
		key: filepath.Join(dir, "id"), knownHosts: filepath.Join(dir, "known")}
	t.Cleanup(func() {
		sshtest.KillUnder(h.root)
		exec.Command("pkill", "-9", "-u", h.svcUser).Run()
		exec.Command("userdel", "-r", h.ciUser).Run()
		exec.Command("userdel", h.svcUser).Run()
		os.RemoveAll(dir)
	})
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", h.key)
	return h
}

// install runs an install.sh with the host's options after extra (the source: --release …),
// in env (nil: this process's).
func (h *installedHost) install(script string, env []string, extra ...string) (string, error) {
	pub, _ := os.ReadFile(h.key + ".pub")
	args := append(extra, "--ci-key", strings.TrimSpace(string(pub)), "--root", h.root, "--prefix", h.prefix,
		"--ci-user", h.ciUser, "--service-user", h.svcUser, "--champion-port", strconv.Itoa(h.championPort),
		"--challenger-port", strconv.Itoa(h.challengerPort), "--no-systemd")
	cmd := exec.Command(script, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
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

// ssh runs one command as the CI key, through the forced command install.sh wrote.
func (h *installedHost) ssh(stdin []byte, command string) (string, error) {
	cmd := exec.Command("ssh", "-i", h.key, "-p", strconv.Itoa(h.sshPort), "-o", "IdentitiesOnly=yes",
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+h.knownHosts,
		h.ciUser+"@127.0.0.1", command)
	cmd.Stdin = bytes.NewReader(stdin)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// serviceOwners names the owner of each example service process working under this host's
// root, so other tests' services on the same machine do not count.
func (h *installedHost) serviceOwners() []string {
	var owners []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil || strings.TrimSpace(string(comm)) != "service" || !strings.HasPrefix(cwd, h.root+"/") {
			continue
		}
		if out, err := exec.Command("ps", "-o", "user:32=", "-p", p.Name()).Output(); err == nil {
			owners = append(owners, strings.TrimSpace(string(out)))
		}
	}
	return owners
}

// The install script's least-privilege model, for real: a CI login that can run only
// perf-host, services (pull-request code) as a second user that cannot write the state.
func TestInstallScriptSeparatesTheCIUserFromTheServices(t *testing.T) {
	h := newInstalledHost(t)
	out, err := h.install("../install.sh", nil)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if !strings.Contains(out, "restrict,command=") || !strings.Contains(out, "Pin this host key") {
		t.Errorf("install.sh did not print the authorized_keys line and the host key:\n%s", out)
	}
	h.startSSHD()
	for _, step := range []struct {
		stdin []byte
		cmd   string
	}{
		{buildTarball(t, "fast", "v1", "exec ./service"), "deploy champion aaaaaaa"},
		{[]byte(serviceSpec), "promote aaaaaaa"},
		{buildTarball(t, "slow", "v2", "exec ./service"), "deploy challenger bbbbbbb"},
		{[]byte(runPlan("bbbbbbb", 2, 0.6)), "run pr-3-bbbbbbb-1"},
	} {
		if out, err := h.ssh(step.stdin, step.cmd); err != nil {
			t.Fatalf("%s: %v\n%s", step.cmd, err, out)
		}
	}
	time.Sleep(time.Second)
	if got := h.serviceOwners(); len(got) != 2 || got[0] != h.svcUser || got[1] != h.svcUser {
		t.Errorf("services run as %v, want both as %s", got, h.svcUser)
	}
	if out, err := h.ssh(nil, "wait pr-3-bbbbbbb-1"); err != nil || !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("wait: %v\n%s", err, out)
	}
	if out, err := h.ssh(nil, "id"); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("the CI key ran something other than perf-host: %v %s", err, out)
	}
	if err := exec.Command("su", "-s", "/bin/sh", h.svcUser, "-c", "touch "+filepath.Join(h.root, "tampered")).Run(); err == nil {
		t.Errorf("the service user can write the host's state")
	}
}
