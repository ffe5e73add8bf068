// Package e2e tests perf-host through a real OpenSSH sshd on 127.0.0.1 with a throwaway host
// key and the forced command, deploying the example service as real processes.
package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// buildRoot holds what this test binary builds (perf-host, the services, their static builds),
// each in a folder of its own; TestMain removes it, so a run leaves nothing in the temp dir.
var buildRoot string

func TestMain(m *testing.M) {
	var err error
	if buildRoot, err = os.MkdirTemp("", "perf-gate-e2e-build-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The unprivileged service user must be able to reach the binaries.
	os.Chmod(buildRoot, 0o755)
	code := m.Run()
	os.RemoveAll(buildRoot)
	os.Exit(code)
}

// buildFolder makes a folder of buildRoot, readable by the service users.
func buildFolder(name string) (string, error) {
	dir := filepath.Join(buildRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

var (
	buildOnce sync.Once
	buildErr  error
	binDir    string
)

// binaries builds perf-host and both variants of the example service once per test binary.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = buildFolder("bin"); buildErr != nil {
			return
		}
		for _, b := range [][]string{
			{"-o", filepath.Join(binDir, "perf-host"), "../cmd/perf-host"},
			{"-o", filepath.Join(binDir, "service-fast"), "../examples/service"},
			{"-tags", "slow", "-o", filepath.Join(binDir, "service-slow"), "../examples/service"},
			{"-o", filepath.Join(binDir, "hostile"), "./hostile"},
		} {
			out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// host is one benchmark host behind its own sshd.
type host struct {
	*sshtest.Host
	t   *testing.T
	dir string
}

type hostOptions struct {
	lockWait       time.Duration
	maxDeployBytes int64
	extraFlags     []string // more perf-host flags, after the harness's own
}

func newHost(t *testing.T, opt hostOptions) *host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sshd harness needs root (as in CI)")
	}
	sh, err := sshtest.Start(sshtest.Options{PerfHost: filepath.Join(binaries(t), "perf-host"), LockWait: opt.lockWait, MaxDeployBytes: opt.maxDeployBytes, ExtraFlags: opt.extraFlags})
	if err != nil {
		t.Fatal(err)
	}
	h := &host{Host: sh, t: t, dir: sh.Dir}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sshd log:\n%s\nstate kept in %s", sh.SSHDLog(30), sh.Dir)
		}
		sh.Close(t.Failed())
	})
	return h
}

// ssh runs one command through the forced command, as the action's client does.
func (h *host) ssh(stdin io.Reader, command string) (stdout, stderr string, code int) {
	return runSSH(h.t, h.SSHCommand(command), stdin)
}

// runSSH runs an ssh client command; a non-zero exit is its code, any other failure fatal.
func runSSH(t *testing.T, cmd *exec.Cmd, stdin io.Reader) (stdout, stderr string, code int) {
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return out.String(), errb.String(), code
}

// follower reads a `wait` command's progress as it comes.
type follower struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	out   strings.Builder
}

// follow starts a `wait` command and reads its progress until a line contains marker.
func follow(t *testing.T, cmd *exec.Cmd, marker string) *follower {
	t.Helper()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &follower{cmd: cmd, lines: bufio.NewScanner(stdout)}
	for f.lines.Scan() {
		f.out.WriteString(f.lines.Text() + "\n")
		if strings.Contains(f.lines.Text(), marker) {
			break
		}
	}
	return f
}

// finish reads the rest of the progress and returns all of it with how wait exited.
func (f *follower) finish() (string, error) {
	for f.lines.Scan() {
		f.out.WriteString(f.lines.Text() + "\n")
	}
	return f.out.String(), f.cmd.Wait()
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

// deployChallenger deploys the fast build's v2 as challenger "bbbbbbb".
func (h *host) deployChallenger() {
	h.t.Helper()
	h.must(bytes.NewReader(buildTarball(h.t, "fast", "v2", "exec ./service")), "deploy challenger bbbbbbb")
}

// followRun starts a run of challenger "bbbbbbb" (pairs of 0.5 s slices) and follows its
// progress until marker.
func (h *host) followRun(runID string, pairs int, marker string) *follower {
	h.t.Helper()
	h.must(strings.NewReader(runPlan("bbbbbbb", pairs, 0.5)), "run "+runID)
	return follow(h.t, h.SSHCommand("wait "+runID), marker)
}

// runPlan is the plan the action would send for a challenger.
func runPlan(challenger string, pairs int, sliceSeconds float64) string {
	return fmt.Sprintf(`{"challenger_sha":%q,"service":%s,"loadgen":{"workload":"work","rate":200,"slice_seconds":%g,"pairs":%d,"seed":1,"warmup_seconds":0.3,"connections":4,"requests":[{"path":"/work?key={{rand 100}}"}]}}`,
		challenger, serviceSpec, sliceSeconds, pairs)
}

// buildTarball packs a release: the example service, a start script and a VERSION file, and
// the hostile program (e2e/hostile) when the start script calls it.
func buildTarball(t *testing.T, variant, version, startScript string) []byte {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(binaries(t), "service-"+variant))
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name string
		mode int64
		body []byte
	}
	files := []file{
		{"service", 0o755, bin},
		{"start.sh", 0o755, []byte("#!/bin/sh\n" + startScript + "\n")},
		{"VERSION", 0o644, []byte(version + "\n")},
	}
	if strings.Contains(startScript, "./hostile") {
		hostile, err := os.ReadFile(filepath.Join(binaries(t), "hostile"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file{"hostile", 0o755, hostile})
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
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

func waitPort(t *testing.T, port int) {
	if err := sshtest.WaitPort(port); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, body string) {
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
