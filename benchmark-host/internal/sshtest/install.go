package sshtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
)

// Installed is a host as install.sh sets one up for real: the three users it creates and its
// cgroup subtree and packet-filter table (named uniquely, so that hosts on one machine and tests
// running side by side never share one), perf-host under a scratch prefix with its state under a
// scratch root, and a real sshd on a port of its own that reads the CI user's authorized_keys.
// Several on one machine make a pool.
type Installed struct {
	Dir            string `json:"dir"`
	Root           string `json:"root"`
	Prefix         string `json:"prefix"`
	CIUser         string `json:"user"`
	ChampionUser   string `json:"champion_user"`
	ChallengerUser string `json:"challenger_user"`
	CgroupName     string `json:"cgroup_name"`
	Cgroup         string `json:"cgroup"` // the subtree ("" without cgroup v2)
	ChampionPort   int    `json:"champion_port"`
	ChallengerPort int    `json:"challenger_port"`
	SSHPort        int    `json:"ssh_port"`
	Key            string `json:"key"`              // the CI key's private half
	KnownHosts     string `json:"known_hosts"`      // a file pinning the host key
	KnownHostsLine string `json:"known_hosts_line"` // the same line, for an action input
	SSHDPid        int    `json:"sshd_pid"`         // stop it, and the host is down
	sshd           *exec.Cmd
}

// NewInstalled names a host (users, cgroup, ports, a scratch directory) and makes its CI key,
// or takes a copy of key (a private key file with its .pub beside it: one CI key for every host
// of a pool); Install installs it. It needs root, as install.sh does.
func NewInstalled(key string) (*Installed, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("sshtest: install.sh needs root")
	}
	suffix := make([]byte, 3)
	rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	// Not under /tmp: each arm's programs see a /tmp of their own, where the arm's home, which
	// lies under the root, would be out of their sight (install.sh refuses such a root).
	dir, err := os.MkdirTemp("/var/lib", "perf-gate-install-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	h := &Installed{Dir: dir, Root: filepath.Join(dir, "root"), Prefix: filepath.Join(dir, "prefix"),
		CIUser: "pgci" + id, ChampionUser: "pgch" + id, ChallengerUser: "pgcl" + id, CgroupName: "perf-gate-test-" + id,
		Key: filepath.Join(dir, "id"), KnownHosts: filepath.Join(dir, "known")}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	h.ChampionPort, h.ChallengerPort, h.SSHPort = ports[0], ports[1], ports[2]
	if mount := cgroup.Mount(); mount != "" {
		h.Cgroup = filepath.Join(mount, h.CgroupName)
	}
	if key != "" {
		for _, ext := range []string{"", ".pub"} {
			b, err := os.ReadFile(key + ext)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(h.Key+ext, b, 0o600); err != nil {
				return nil, err
			}
		}
		return h, nil
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", h.Key).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
	}
	return h, nil
}

// Install runs an install.sh with the host's names, ports and key, after extra (the source,
// --release …, or more options), in env (nil: this process's); it returns install.sh's output.
func (h *Installed) Install(script string, env []string, extra ...string) (string, error) {
	pub, _ := os.ReadFile(h.Key + ".pub")
	args := append(extra, "--ci-key", strings.TrimSpace(string(pub)), "--root", h.Root, "--prefix", h.Prefix,
		"--ci-user", h.CIUser, "--champion-user", h.ChampionUser, "--challenger-user", h.ChallengerUser,
		"--champion-port", strconv.Itoa(h.ChampionPort), "--challenger-port", strconv.Itoa(h.ChallengerPort),
		"--cgroup-name", h.CgroupName, "--no-systemd")
	cmd := exec.Command(script, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// StartSSHD starts sshd on the host's port with a host key of its own, pinned in KnownHosts.
func (h *Installed) StartSSHD() error {
	hostKey := filepath.Join(h.Dir, "hostkey")
	if _, err := os.Stat(hostKey); err != nil {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
			return fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	config := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n",
		h.SSHPort, hostKey, filepath.Join(h.Dir, "sshd.pid"))
	if err := os.WriteFile(filepath.Join(h.Dir, "sshd_config"), []byte(config), 0o600); err != nil {
		return err
	}
	os.MkdirAll("/run/sshd", 0o755)
	h.sshd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(h.Dir, "sshd_config"))
	logf, _ := os.OpenFile(filepath.Join(h.Dir, "sshd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	h.sshd.Stdout, h.sshd.Stderr = logf, logf
	if err := h.sshd.Start(); err != nil {
		return err
	}
	h.SSHDPid = h.sshd.Process.Pid
	hostPub, _ := os.ReadFile(hostKey + ".pub")
	f := strings.Fields(string(hostPub))
	h.KnownHostsLine = fmt.Sprintf("[127.0.0.1]:%d %s %s", h.SSHPort, f[0], f[1])
	if err := os.WriteFile(h.KnownHosts, []byte(h.KnownHostsLine+"\n"), 0o600); err != nil {
		return err
	}
	return WaitPort(h.SSHPort)
}

// StopSSHD stops sshd: the host is down for its clients, and what it runs keeps running.
func (h *Installed) StopSSHD() {
	if h.sshd != nil && h.sshd.Process != nil {
		h.sshd.Process.Kill()
		h.sshd.Wait()
		h.sshd = nil
	}
}

// Remove stops sshd and everything the host's users run, and removes what install.sh made:
// the users, the cgroup subtree, the arms' loop mounts, the packet filter's table; keep leaves
// the scratch directory (its state and logs) for a look after a failure.
func (h *Installed) Remove(keep bool) {
	h.StopSSHD()
	for _, u := range []string{h.CIUser, h.ChampionUser, h.ChallengerUser} {
		exec.Command("pkill", "-9", "-u", u).Run() // this host's own users only
	}
	KillUnder(h.Root)
	RemoveCgroup(h.Cgroup)
	for _, c := range cgroup.V1Controllers { // a hybrid host's v1 subtrees
		RemoveCgroup(filepath.Join("/sys/fs/cgroup", c, h.CgroupName))
	}
	for _, a := range []string{"champion", "challenger"} {
		exec.Command("umount", filepath.Join(h.Root, "arms", a)).Run()
	}
	exec.Command("nft", "delete", "table", "inet", strings.ReplaceAll(h.CgroupName, "-", "_")).Run()
	exec.Command("userdel", "-r", h.CIUser).Run()
	exec.Command("userdel", h.ChampionUser).Run()
	exec.Command("userdel", h.ChallengerUser).Run()
	if !keep {
		os.RemoveAll(h.Dir)
	}
}
