// Package service starts a build's service on a port, health-checks it over HTTP and captures
// its output; package arm decides as whom, where, and stops it.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Validate checks a service spec against the contract's limits and fills its defaults;
// errors name the field.
func Validate(s *contract.ServiceSpec) error {
	if len(s.Command) < contract.AtLeastOne.Min || s.Command[0] == "" {
		return errors.New("service.command: required, an argv list such as [\"./bin/server\"]")
	}
	if !filepath.IsAbs(s.Command[0]) && !strings.HasPrefix(s.Command[0], "./") && strings.Contains(s.Command[0], "/") {
		return fmt.Errorf("service.command[0]: a relative program must start with ./, got %q", s.Command[0])
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || k == "PORT" {
			return fmt.Errorf("service.env: %q is not an allowed variable name (PORT is set by the host)", k)
		}
	}
	if s.HealthPath == "" {
		s.HealthPath = "/health"
	}
	if err := contract.URLPath.Check(s.HealthPath); err != nil {
		return fmt.Errorf("service.health_path: %w", err)
	}
	if s.HealthTimeoutSeconds == 0 {
		s.HealthTimeoutSeconds = 30
	}
	if err := contract.HealthTimeoutSeconds.Check(s.HealthTimeoutSeconds); err != nil {
		return fmt.Errorf("service.health_timeout_seconds: %w", err)
	}
	return nil
}

// Process is a running service.
type Process struct {
	Name    string
	Port    int
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Start launches the spec's command in dir with PORT set, in a session of its own, with
// stdout and stderr appended to logPath. launch starts the prepared command (package arm: as
// the arm's user, in its cgroup, on its CPUs).
func Start(name string, spec contract.ServiceSpec, dir string, port int, logPath string, launch func(*exec.Cmd) error) (*Process, error) {
	// Something else answering on the port would pass the health check in our service's place.
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		return nil, fmt.Errorf("%s: port %d is already in use by another process (%v); stop it or configure another port", name, port, err)
	} else {
		l.Close()
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "PORT=" + strconv.Itoa(port)}
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own (and so a process group, stopped as one): with the kernel's
	// autogroup scheduling, each arm then weighs the same against the other, whoever started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	fmt.Fprintf(logFile, "--- perf-host: starting %s on :%d: %s\n", name, port, strings.Join(spec.Command, " "))
	if err := launch(cmd); err != nil {
		return nil, fmt.Errorf("%s: cannot start %q in %s: %w", name, spec.Command[0], dir, err)
	}
	p := &Process{Name: name, Port: port, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the service's process id (its process group id too).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitError describes how the process ended, once Exited is closed.
func (p *Process) ExitError() string {
	if p.err == nil {
		return "exited with status 0"
	}
	return p.err.Error()
}

// WaitHealthy polls the health path until it answers 200, the process exits, or the timeout.
func (p *Process) WaitHealthy(ctx context.Context, path string, timeout time.Duration) error {
	return WaitHealthy(ctx, p.Port, path, timeout, p.done)
}

// WaitHealthy polls http://127.0.0.1:port/path; exited (may be nil) aborts the wait early.
func WaitHealthy(ctx context.Context, port int, path string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
	last := "no answer"
	for {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = "HTTP " + resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-exited:
			return errors.New("exited before becoming healthy")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %v at %s (last: %s)", timeout, url, last)
		}
	}
}

// LogTail returns the last lines of a log file, at most 4 KiB.
func LogTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	all := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(b, []byte("?"))), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
