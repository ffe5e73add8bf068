// Package e2e tests perf-host through a real OpenSSH sshd on 127.0.0.1 with a throwaway host
// key and the forced command, deploying the example service as real processes.
package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildErr  error
	binDir    string
)

// binaries builds perf-host and both variants of the example service once per test binary.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "perf-gate-e2e-bin-")
		if buildErr != nil {
			return
		}
		for _, b := range [][]string{
			{"-o", filepath.Join(binDir, "perf-host"), "../cmd/perf-host"},
			{"-o", filepath.Join(binDir, "service-fast"), "../examples/service"},
			{"-tags", "slow", "-o", filepath.Join(binDir, "service-slow"), "../examples/service"},
		} {
			out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
		// The unprivileged service user must be able to run the binaries.
		os.Chmod(binDir, 0o755)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// host is one benchmark host behind its own sshd.
type host struct {
	t                       *testing.T
	dir, root               string
	sshPort                 int
	championPort, challPort int
	key, knownHosts         string
}

type hostOptions struct {
	lockWait       time.Duration
	maxDeployBytes int64
}

func newHost(t *testing.T, opt hostOptions) *host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sshd harness needs root (as in CI)")
	}
	for _, bin := range []string{"/usr/sbin/sshd", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found: install openssh-server and openssh-client (.ci/run does)", bin)
		}
	}
	bins := binaries(t)
	dir, err := os.MkdirTemp("", "perf-gate-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	h := &host{t: t, dir: dir, root: filepath.Join(dir, "root"), sshPort: freePort(t), championPort: freePort(t), challPort: freePort(t),
		key: filepath.Join(dir, "id"), knownHosts: filepath.Join(dir, "known_hosts")}
	if opt.lockWait == 0 {
		opt.lockWait = 60 * time.Second
	}
	if opt.maxDeployBytes == 0 {
		opt.maxDeployBytes = 64 << 20
	}
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey"))
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", h.key)
	pub, _ := os.ReadFile(h.key + ".pub")
	forced := fmt.Sprintf("%s ssh --root %s --service-user nobody --champion-port %d --challenger-port %d --lock-wait %s --max-deploy-bytes %d --min-free-disk 1 --max-load-per-cpu 100",
		filepath.Join(bins, "perf-host"), h.root, h.championPort, h.challPort, opt.lockWait, opt.maxDeployBytes)
	writeFile(t, filepath.Join(dir, "authorized_keys"), fmt.Sprintf("restrict,command=%q %s", forced, pub))
	writeFile(t, filepath.Join(dir, "sshd_config"), strings.Join([]string{
		fmt.Sprintf("Port %d", h.sshPort),
		"ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(dir, "hostkey"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin forced-commands-only",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"AllowTcpForwarding no",
		"X11Forwarding no",
		"LogLevel VERBOSE",
	}, "\n")+"\n")
	os.MkdirAll("/run/sshd", 0o755)
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	sshdLog, _ := os.Create(filepath.Join(dir, "sshd.log"))
	sshd.Stdout, sshd.Stderr = sshdLog, sshdLog
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	hostPub, _ := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	fields := strings.Fields(string(hostPub))
	writeFile(t, h.knownHosts, fmt.Sprintf("[127.0.0.1]:%d %s %s\n", h.sshPort, fields[0], fields[1]))
	waitPort(t, h.sshPort)
	t.Cleanup(func() {
		sshd.Process.Kill()
		sshd.Wait()
		killUnder(h.root)
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Logf("sshd log:\n%s", lastLines(string(b), 30))
			t.Logf("state kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return h
}

// ssh runs one command through the forced command, as the action's client does.
func (h *host) ssh(stdin io.Reader, command string) (stdout, stderr string, code int) {
	cmd := h.sshCmd(command)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("ssh %q: %v", command, err)
	}
	return out.String(), errb.String(), code
}

func (h *host) sshCmd(command string) *exec.Cmd {
	return exec.Command("ssh", "-i", h.key, "-p", strconv.Itoa(h.sshPort),
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+h.knownHosts, "-o", "LogLevel=ERROR",
		"root@127.0.0.1", "--", command)
}

// must runs a command that has to succeed.
func (h *host) must(stdin io.Reader, command string) string {
	h.t.Helper()
	out, errs, code := h.ssh(stdin, command)
	if code != 0 {
		h.t.Fatalf("%q exited %d:\n%s%s", command, code, out, errs)
	}
	return out
}

const serviceSpec = `{"command":["./start.sh"],"health_path":"/health","health_timeout_seconds":5}`

// setupChampion deploys and promotes the fast build as champion "aaaaaaa".
func (h *host) setupChampion() {
	h.t.Helper()
	h.must(bytes.NewReader(buildTarball(h.t, "fast", "v1", "exec ./service")), "deploy champion aaaaaaa")
	h.must(strings.NewReader(serviceSpec), "promote aaaaaaa")
}

// runPlan is the plan the action would send for a challenger.
func runPlan(challenger string, pairs int, sliceSeconds float64) string {
	return fmt.Sprintf(`{"challenger_sha":%q,"service":%s,"loadgen":{"workload":"work","rate":200,"slice_seconds":%g,"pairs":%d,"seed":1,"warmup_seconds":0.3,"connections":4,"requests":[{"path":"/work?key={{rand 100}}"}]}}`,
		challenger, serviceSpec, sliceSeconds, pairs)
}

// buildTarball packs a release: the example service, a start script and a VERSION file.
func buildTarball(t *testing.T, variant, version, startScript string) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(binaries(t), "service-"+variant))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{
		{"service", 0o755, bin},
		{"start.sh", 0o755, []byte("#!/bin/sh\n" + startScript + "\n")},
		{"VERSION", 0o644, []byte(version + "\n")},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write(f.body)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// version asks a port which build answers there.
func version(port int) string {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/version", port))
	if err != nil {
		return "down: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitPort(t *testing.T, port int) {
	for range 100 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on :%d", port)
}

func run(t *testing.T, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func writeFile(t *testing.T, path, body string) {
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// killUnder stops every process started with this root (supervisor, executors) and their
// services, which perf-host starts in their own process groups.
func killUnder(root string) {
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
