// Package sshtest starts a throwaway benchmark host for tests: a real OpenSSH sshd on
// 127.0.0.1 with its own host key, and a client key whose authorized_keys entry forces
// perf-host, exactly as install.sh sets up a real host. The Go end-to-end tests use it, and so
// do the action's tests, through the testhost command.
package sshtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Options configure a host.
type Options struct {
	PerfHost       string // path to the perf-host binary
	LockWait       time.Duration
	MaxDeployBytes int64
	ServiceUser    string
	ExtraFlags     []string // more perf-host flags, e.g. --max-run-seconds
}

// Host is a running sshd in front of perf-host.
type Host struct {
	Dir            string `json:"dir"`
	Root           string `json:"root"`
	User           string `json:"user"`
	SSHPort        int    `json:"ssh_port"`
	ChampionPort   int    `json:"champion_port"`
	ChallengerPort int    `json:"challenger_port"`
	Key            string `json:"key"`              // client private key file
	KnownHosts     string `json:"known_hosts"`      // file pinning the host key
	KnownHostsLine string `json:"known_hosts_line"` // the same line, for an action input
	SSHDPid        int    `json:"sshd_pid"`         // the listener; each connection is a child of it
	Cgroup         string `json:"cgroup"`           // the host's own cgroup subtree ("" without cgroup v2)
	sshd           *exec.Cmd
}

// Start sets up and starts the host. It needs root (sshd switches to the login user).
func Start(opt Options) (*Host, error) {
	if err := checkTools(); err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	dir, err := os.MkdirTemp("", "perf-gate-host-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	h := &Host{Dir: dir, Root: filepath.Join(dir, "root"), User: "root", Key: filepath.Join(dir, "id"), KnownHosts: filepath.Join(dir, "known_hosts")}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	h.SSHPort, h.ChampionPort, h.ChallengerPort = ports[0], ports[1], ports[2]
	for _, key := range []string{filepath.Join(dir, "hostkey"), h.Key} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	// A cgroup subtree of its own, as install.sh makes one, so that hosts never share groups.
	if mount := cgroup.Mount(); mount != "" {
		h.Cgroup = filepath.Join(mount, filepath.Base(dir))
		if err := os.Mkdir(h.Cgroup, 0o755); err != nil {
			return nil, err
		}
	}
	if err := h.writeConfig(opt); err != nil {
		return nil, err
	}
	if err := h.startSSHD(); err != nil {
		return nil, err
	}
	if err := WaitPort(h.SSHPort); err != nil {
		h.Close(true)
		return nil, err
	}
	return h, nil
}

// checkTools says what a host needs that this machine lacks: root (sshd switches to the login
// user) and OpenSSH.
func checkTools() error {
	if os.Geteuid() != 0 {
		return errors.New("sshtest: sshd needs root")
	}
	for _, bin := range []string{"/usr/sbin/sshd", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("sshtest: %s not found: install openssh-server and openssh-client", bin)
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.LockWait == 0 {
		o.LockWait = 60 * time.Second
	}
	if o.MaxDeployBytes == 0 {
		o.MaxDeployBytes = 64 << 20
	}
	if o.ServiceUser == "" {
		o.ServiceUser = "nobody"
	}
	return o
}

// writeConfig writes sshd's configuration and the authorized_keys entry that forces perf-host
// with the host's flags.
func (h *Host) writeConfig(opt Options) error {
	pub, _ := os.ReadFile(h.Key + ".pub")
	forced := fmt.Sprintf("%s ssh --root %s --service-user %s --champion-port %d --challenger-port %d --lock-wait %s --max-deploy-bytes %d --min-free-disk 1 --max-foreign-cores 64 --settle-seconds 0 --cgroup %q %s",
		opt.PerfHost, h.Root, opt.ServiceUser, h.ChampionPort, h.ChallengerPort, opt.LockWait, opt.MaxDeployBytes, h.Cgroup, strings.Join(opt.ExtraFlags, " "))
	files := map[string]string{
		"authorized_keys": fmt.Sprintf("restrict,command=%q %s", forced, pub),
		"sshd_config": strings.Join([]string{
			fmt.Sprintf("Port %d", h.SSHPort),
			"ListenAddress 127.0.0.1",
			"HostKey " + filepath.Join(h.Dir, "hostkey"),
			"AuthorizedKeysFile " + filepath.Join(h.Dir, "authorized_keys"),
			"PidFile " + filepath.Join(h.Dir, "sshd.pid"),
			"UsePAM no",
			"StrictModes no",
			"PermitRootLogin forced-commands-only",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"AllowTcpForwarding no",
			"X11Forwarding no",
			"LogLevel VERBOSE",
		}, "\n") + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(h.Dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startSSHD starts sshd and pins its host key for the client.
func (h *Host) startSSHD() error {
	os.MkdirAll("/run/sshd", 0o755)
	h.sshd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(h.Dir, "sshd_config"))
	logf, _ := os.Create(filepath.Join(h.Dir, "sshd.log"))
	h.sshd.Stdout, h.sshd.Stderr = logf, logf
	if err := h.sshd.Start(); err != nil {
		return err
	}
	h.SSHDPid = h.sshd.Process.Pid
	hostPub, _ := os.ReadFile(filepath.Join(h.Dir, "hostkey.pub"))
	fields := strings.Fields(string(hostPub))
	h.KnownHostsLine = fmt.Sprintf("[127.0.0.1]:%d %s %s", h.SSHPort, fields[0], fields[1])
	return os.WriteFile(h.KnownHosts, []byte(h.KnownHostsLine+"\n"), 0o600)
}

// SSHCommand is the client command for one remote command, as the action runs it.
func (h *Host) SSHCommand(command string) *exec.Cmd {
	return exec.Command("ssh", "-i", h.Key, "-p", strconv.Itoa(h.SSHPort),
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+h.KnownHosts, "-o", "LogLevel=ERROR",
		h.User+"@127.0.0.1", "--", command)
}

// SSHDLog is the tail of sshd's log, for failure reports.
func (h *Host) SSHDLog(lines int) string {
	b, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// Close stops sshd and every process perf-host started for this host; keep leaves the files.
func (h *Host) Close(keep bool) {
	if h.sshd != nil && h.sshd.Process != nil {
		h.sshd.Process.Kill()
		h.sshd.Wait()
	}
	KillUnder(h.Root)
	RemoveCgroup(h.Cgroup)
	if !keep {
		os.RemoveAll(h.Dir)
	}
}

// RemoveCgroup kills whatever runs in a cgroup subtree and removes it, children first.
func RemoveCgroup(dir string) {
	if dir == "" {
		return
	}
	os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	children, _ := os.ReadDir(dir)
	for _, c := range children {
		if c.IsDir() {
			RemoveCgroup(filepath.Join(dir, c.Name()))
		}
	}
	for range 100 {
		if os.Remove(dir) == nil || errors.Is(os.Remove(dir), os.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort is one port free on loopback (FreePorts) for a test, which fails without one.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// FreePorts is n ports free on loopback, all different, from outside the kernel's ephemeral
// range as an arm's extra ports are (service.FreeRange): one from inside it, free when chosen, is
// any outgoing connection's to take before the test's service binds it, and CI once saw a pool
// test's champion port taken so (by one of the test's own ssh connections).
func FreePorts(n int) ([]int, error) {
	return service.FreePorts(service.PortRange{}, n, nil)
}

// ArmExec builds arm-exec for a test into a directory of the test's own, which every user may
// enter (an arm's program starts it as its user) and which is under /var/lib, not under the
// directories an arm's programs see as their own (/tmp): the test may put arms' homes in it.
func ArmExec(t testing.TB) (dir, exe string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/lib", "perf-gate-arm-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe = filepath.Join(dir, "arm-exec")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/perf-gate/perf-gate/benchmark-host/cmd/arm-exec").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, exe
}

// Serve listens on address (network "tcp" or "unix", "@name" an abstract socket) for the test,
// answering every connection with answer and closing it; the listener closes with the test.
func Serve(t testing.TB, network, address, answer string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(answer))
			c.Close()
		}
	}()
	return l
}

// WaitPort waits until something accepts connections on the port.
func WaitPort(port int) error {
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on :%d", port)
}

// KillUnder stops every process started with this root (supervisor, runs) or running in it
// (services, whose working directory is their release).
func KillUnder(root string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if strings.Contains(string(cmdline), root) || strings.HasPrefix(cwd, root) {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	time.Sleep(300 * time.Millisecond)
}
