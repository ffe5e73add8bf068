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

// The install script's least-privilege model, for real: a CI login that can run only
// perf-host, services (pull-request code) as a second user that cannot write the state.
func TestInstallScriptSeparatesTheCIUserFromTheServices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("install.sh needs root (as in CI)")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	ciUser, svcUser := "pgci"+hex.EncodeToString(suffix), "pgsvc"+hex.EncodeToString(suffix)
	dir, _ := os.MkdirTemp("", "perf-gate-install-")
	os.Chmod(dir, 0o755)
	root, prefix := filepath.Join(dir, "root"), filepath.Join(dir, "prefix")
	champion, challenger, sshPort := freePort(t), freePort(t), freePort(t)
	t.Cleanup(func() {
		sshtest.KillUnder(root)
		exec.Command("pkill", "-9", "-u", svcUser).Run()
		exec.Command("userdel", "-r", ciUser).Run()
		exec.Command("userdel", svcUser).Run()
		os.RemoveAll(dir)
	})
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "id"))
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey"))
	pub, _ := os.ReadFile(filepath.Join(dir, "id.pub"))
	out, err := exec.Command("../install.sh", "--ci-key", strings.TrimSpace(string(pub)), "--root", root, "--prefix", prefix,
		"--ci-user", ciUser, "--service-user", svcUser, "--champion-port", strconv.Itoa(champion),
		"--challenger-port", strconv.Itoa(challenger), "--no-systemd").CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "restrict,command=") || !strings.Contains(string(out), "Pin this host key") {
		t.Errorf("install.sh did not print the authorized_keys line and the host key:\n%s", out)
	}
	writeFile(t, filepath.Join(dir, "sshd_config"), fmt.Sprintf(
		"Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n",
		sshPort, filepath.Join(dir, "hostkey"), filepath.Join(dir, "sshd.pid")))
	os.MkdirAll("/run/sshd", 0o755)
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sshd.Process.Kill(); sshd.Wait() })
	hostPub, _ := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	f := strings.Fields(string(hostPub))
	writeFile(t, filepath.Join(dir, "known"), fmt.Sprintf("[127.0.0.1]:%d %s %s\n", sshPort, f[0], f[1]))
	waitPort(t, sshPort)
	ssh := func(stdin []byte, command string) (string, error) {
		cmd := exec.Command("ssh", "-i", filepath.Join(dir, "id"), "-p", strconv.Itoa(sshPort), "-o", "IdentitiesOnly=yes",
			"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile="+filepath.Join(dir, "known"),
			ciUser+"@127.0.0.1", command)
		cmd.Stdin = bytes.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
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
		if out, err := ssh(step.stdin, step.cmd); err != nil {
			t.Fatalf("%s: %v\n%s", step.cmd, err, out)
		}
	}
	time.Sleep(time.Second)
	owners, _ := exec.Command("ps", "-o", "user:32=", "-C", "service").Output()
	if got := strings.Fields(string(owners)); len(got) != 2 || got[0] != svcUser || got[1] != svcUser {
		t.Errorf("services run as %v, want both as %s", got, svcUser)
	}
	if out, err := ssh(nil, "wait pr-3-bbbbbbb-1"); err != nil || !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("wait: %v\n%s", err, out)
	}
	if out, err := ssh(nil, "id"); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("the CI key ran something other than perf-host: %v %s", err, out)
	}
	if err := exec.Command("su", "-s", "/bin/sh", svcUser, "-c", "touch "+filepath.Join(root, "tampered")).Run(); err == nil {
		t.Errorf("the service user can write the host's state")
	}
}
