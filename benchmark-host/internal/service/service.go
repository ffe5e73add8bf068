// Package service starts a build's service on a port, health-checks it over HTTP and captures
// its output; package arm decides as whom, where, and stops it.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Validate checks a service spec against the contract's limits and fills its defaults;
// errors name the field.
func Validate(s *contract.ServiceSpec) error {
	if err := contract.PortNames.Check(s.Ports); err != nil {
		return fmt.Errorf("service.ports%s", prefixed(err))
	}
	if err := validateDependencies(s); err != nil {
		return err
	}
	vars := contract.ServiceVariables(contract.ServicePortNames(*s))
	if len(s.Command) > 0 && s.Command[0] == "" {
		return errors.New("service.command[0]: the program to run, such as ./bin/server")
	}
	if len(s.Command) > 0 {
		if err := checkArgv("service.command", s.Command, vars); err != nil {
			return err
		}
	}
	if len(s.Setup) > 0 {
		if s.Setup[0] == "" {
			return errors.New("service.setup[0]: the program to run, such as ./bin/migrate")
		}
		if err := checkArgv("service.setup", s.Setup, vars); err != nil {
			return err
		}
	}
	if s.PortEnv != "" {
		if err := contract.PortEnvError(s.PortEnv); err != nil {
			return fmt.Errorf("service.port_env: %w", err)
		}
	}
	if err := checkEnv("service.env", s.Env, cmp.Or(s.PortEnv, contract.VarPort), vars); err != nil {
		return err
	}
	FillDefaults(s)
	if err := contract.States.Check(s.State); err != nil {
		return fmt.Errorf("service.state: %w", err)
	}
	if err := contract.SetupTimeoutSeconds.Check(s.SetupTimeoutSeconds); err != nil {
		return fmt.Errorf("service.setup_timeout_seconds: %w", err)
	}
	if err := contract.HealthChecks.Check(s.HealthCheck); err != nil {
		return fmt.Errorf("service.health_check: %w", err)
	}
	if err := contract.URLPath.Check(s.HealthPath); err != nil {
		return fmt.Errorf("service.health_path: %w", err)
	}
	if err := contract.HealthTimeoutSeconds.Check(s.HealthTimeoutSeconds); err != nil {
		return fmt.Errorf("service.health_timeout_seconds: %w", err)
	}
	if err := contract.ReadyTimeoutSeconds.Check(s.ReadyTimeoutSeconds); err != nil {
		return fmt.Errorf("service.ready_timeout_seconds: %w", err)
	}
	return nil
}

// checkEnv checks an env map's names (none the host sets: portEnv is the main port's variable,
// "" for a dependency, which has none) and its values' variables.
func checkEnv(field string, env map[string]string, portEnv string, vars map[string]string) error {
	hostVars := "PATH, HOME, " + portEnv + ", PORT_<NAME> and STATE_DIR"
	if portEnv == "" {
		hostVars = "PATH, HOME, PORT_<NAME> and STATE_DIR"
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if err := contract.EnvName.Check(k); err != nil {
			return fmt.Errorf("%s.%s: %w", field, k, err)
		}
		if contract.HostSetsEnv(k, cmp.Or(portEnv, contract.VarPort)) && (portEnv != "" || k != contract.VarPort) {
			return fmt.Errorf("%s.%s: set by the host (%s are the host's); name another variable", field, k, hostVars)
		}
		if strings.ContainsRune(env[k], 0) {
			return fmt.Errorf("%s.%s: a value may not hold a NUL byte", field, k)
		}
		if _, err := contract.ExpandArg(env[k], vars); err != nil {
			return fmt.Errorf("%s.%s: %w", field, k, err)
		}
	}
	return nil
}

// FillDefaults sets the contract's defaults on the fields left out (also of a spec stored by an
// older perf-host).
func FillDefaults(s *contract.ServiceSpec) {
	if s.State == "" {
		s.State = contract.StateFresh
	}
	if s.SetupTimeoutSeconds == 0 {
		s.SetupTimeoutSeconds = 60
	}
	if s.HealthCheck == "" {
		s.HealthCheck = contract.HealthHTTP
	}
	if s.HealthPath == "" {
		s.HealthPath = "/health"
	}
	if s.HealthTimeoutSeconds == 0 {
		s.HealthTimeoutSeconds = 30
	}
	if s.PortEnv == "" {
		s.PortEnv = contract.VarPort
	}
	if s.ReadyTimeoutSeconds == 0 {
		s.ReadyTimeoutSeconds = 30
	}
}

// checkArgv checks a program's path and every argument's variables.
func checkArgv(field string, argv []string, vars map[string]string) error {
	if !filepath.IsAbs(argv[0]) && !strings.HasPrefix(argv[0], "./") && strings.Contains(argv[0], "/") {
		return fmt.Errorf("%s[0]: a relative program must start with ./, got %q", field, argv[0])
	}
	for i, a := range argv {
		if _, err := contract.ExpandArg(a, vars); err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%s[%d]: an argument may not hold a NUL byte", field, i)
		}
	}
	return nil
}

// prefixed turns a list error ("[1]: …" or "at most …") into the rest of a field's message.
func prefixed(err error) string {
	if msg := err.Error(); strings.HasPrefix(msg, "[") {
		return msg
	}
	return ": " + err.Error()
}

// Instance is where one arm runs a service: its fresh copy of the build, its ports and its
// STATE_DIR.
type Instance struct {
	Dir      string         // the working directory, and HOME
	Port     int            // PORT; 0 in a dependency's instance, which has no main port
	Ports    map[string]int // service.ports and the dependencies' by name: PORT_<NAME>
	StateDir string         // STATE_DIR
	// Container, for a container image's build, is the command that runs argv (empty: the
	// image's own entrypoint and cmd) with env (the host's variables and service.env) in it.
	Container func(argv, env []string) (*exec.Cmd, error)
}

// Vars are the variables the host gives the service, as the argv expands them.
func (in Instance) Vars() map[string]string {
	vars := map[string]string{contract.VarStateDir: in.StateDir}
	if in.Port != 0 {
		vars[contract.VarPort] = strconv.Itoa(in.Port)
	}
	for name, port := range in.Ports {
		vars[contract.PortVariable(name)] = strconv.Itoa(port)
	}
	return vars
}

// PortVars are PORT and each PORT_<NAME> with their numbers, for the run's record.
func (in Instance) PortVars() map[string]int {
	out := map[string]int{contract.VarPort: in.Port}
	for name, port := range in.Ports {
		out[contract.PortVariable(name)] = port
	}
	return out
}

// portsOf are the variables and numbers of the main port (when the instance has one) and of
// the named extra ports only: what one process of the instance listens on.
func (in Instance) portsOf(names []string) map[string]int {
	out := map[string]int{}
	if in.Port != 0 {
		out[contract.VarPort] = in.Port
	}
	for _, name := range names {
		out[contract.PortVariable(name)] = in.Ports[name]
	}
	return out
}

// Describe is the instance in one line, for logs: "PORT=8001 PORT_PEER=38211 STATE_DIR=…".
func (in Instance) Describe() string {
	vars := in.Vars()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		parts = append(parts, k+"="+vars[k])
	}
	return strings.Join(parts, " ")
}

// Command prepares argv (expanded) to run in the instance's directory with the documented
// environment: PATH, HOME (the working directory), the main port in service.port_env (PORT
// unless named), PORT_<NAME>, STATE_DIR, then service.env (its values expanded as the argv
// is); nothing of perf-host's own environment. A container image's build runs it in the image
// instead (Container), where the image's PATH and HOME stand.
func (in Instance) Command(spec contract.ServiceSpec, argv []string) (*exec.Cmd, error) {
	return in.command(argv, spec.PortEnv, spec.Env)
}

func (in Instance) command(argv []string, portEnv string, env map[string]string) (*exec.Cmd, error) {
	vars := in.Vars()
	expanded := make([]string, len(argv))
	for i, a := range argv {
		var err error
		if expanded[i], err = contract.ExpandArg(a, vars); err != nil {
			return nil, err
		}
	}
	var vals []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		name := k
		if k == contract.VarPort && portEnv != "" {
			name = portEnv
		}
		vals = append(vals, name+"="+vars[k])
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, err := contract.ExpandArg(env[k], vars)
		if err != nil {
			return nil, fmt.Errorf("env.%s: %w", k, err)
		}
		vals = append(vals, k+"="+v)
	}
	var cmd *exec.Cmd
	switch {
	case in.Container != nil:
		var err error
		if cmd, err = in.Container(expanded, vals); err != nil {
			return nil, err
		}
	case len(expanded) == 0:
		return nil, errors.New("service.command: required for a build that is not a container image, an argv list such as [\"./bin/server\"]")
	default:
		cmd = exec.Command(expanded[0], expanded[1:]...)
		cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + in.Dir}, vals...)
	}
	cmd.Dir = in.Dir
	// A session of its own (and so a process group, stopped as one): with the kernel's
	// autogroup scheduling, each arm then weighs the same against the other, whoever started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	return cmd, nil
}

// Process is a running service.
type Process struct {
	Name    string
	Port    int
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	logged  *LogWriter
}

// Start launches the spec's command in the instance, in a session of its own, with stdout and
// stderr appended to its log (capped: see Log). launch starts the prepared command (package
// arm: as the arm's user, in its cgroup, on its CPUs).
func Start(name string, spec contract.ServiceSpec, in Instance, log Log, launch func(*exec.Cmd) error) (*Process, error) {
	cmd, err := in.Command(spec, spec.Command)
	if err != nil {
		if out, lerr := log.Open(fmt.Sprintf("--- perf-host: cannot start %s (%s): %v\n", name, in.Describe(), err)); lerr == nil {
			out.W.Close()
			out.Wait(time.Second)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return startProcess(name, cmd, in, spec.Ports, log, launch)
}

// startProcess starts a prepared command of the instance that listens on its main port (if
// any) and the named extra ports, once none of them is taken.
func startProcess(name string, cmd *exec.Cmd, in Instance, portNames []string, log Log, launch func(*exec.Cmd) error) (*Process, error) {
	// Something else answering on a port would pass the health check in our service's place,
	// or take the port the service needs.
	ports := in.portsOf(portNames)
	for _, v := range slices.Sorted(maps.Keys(ports)) {
		port := ports[v]
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, &PortTakenError{Port: port, Var: v, Holder: PortHolder(port), Err: err})
		} else {
			l.Close()
		}
	}
	out, err := log.Open(fmt.Sprintf("--- perf-host: starting %s (%s): %s\n", name, in.Describe(), strings.Join(cmd.Args, " ")))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out.W, out.W
	err = launch(cmd)
	out.W.Close() // the process holds its own copy
	if err != nil {
		return nil, fmt.Errorf("%s: cannot start %q in %s: %w", name, cmd.Path, in.Dir, err)
	}
	p := &Process{Name: name, Port: in.Port, LogPath: log.Path, cmd: cmd, done: make(chan struct{}), logged: out}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the service's process id (its process group id too).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Logged waits, up to timeout, until the log holds everything the process and its children
// wrote (they have all closed their output): a capped log writes its kept end last.
func (p *Process) Logged(timeout time.Duration) { p.logged.Wait(timeout) }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitError describes how the process ended, once Exited is closed.
func (p *Process) ExitError() string {
	if p.err == nil {
		return "exited with status 0"
	}
	return p.err.Error()
}

// Health is how a service proves it is ready: its spec's health_check and health_path.
type Health struct{ Check, Path string }

// HealthOf is the health check of a spec.
func HealthOf(s contract.ServiceSpec) Health { return Health{Check: s.HealthCheck, Path: s.HealthPath} }

// WaitHealthy polls the health check until it passes, the process exits, or the timeout.
func (p *Process) WaitHealthy(ctx context.Context, h Health, timeout time.Duration) error {
	return WaitHealthy(ctx, p.Port, h, timeout, p.done)
}

// WaitHealthy polls the service on 127.0.0.1:port: GET path must answer 200 (health_check
// http), or grpc.health.v1.Health/Check for the whole server must answer SERVING (grpc);
// exited (may be nil) aborts the wait early.
func WaitHealthy(ctx context.Context, port int, h Health, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	probe, where, closeProbe := healthProbe(port, h)
	defer closeProbe()
	last, err := poll(ctx, deadline, exited, probe)
	switch {
	case errors.Is(err, errExited):
		return errors.New("exited before becoming healthy")
	case errors.Is(err, errDeadline):
		return fmt.Errorf("not healthy after %v at %s (last: %s)", timeout, where, last)
	}
	return err
}

var (
	errExited   = errors.New("exited")
	errDeadline = errors.New("deadline")
)

// poll tries probe every 50 ms until it passes (nil), exited closes (errExited), ctx ends, or
// the deadline passes (errDeadline, with the last try's error).
func poll(ctx context.Context, deadline time.Time, exited <-chan struct{}, probe func(context.Context) error) (last string, err error) {
	last = "no answer"
	for {
		err := probe(ctx)
		if err == nil {
			return "", nil
		}
		last = err.Error()
		select {
		case <-exited:
			return last, errExited
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return last, errDeadline
		}
	}
}

// healthProbe returns one attempt at the health check, where it looks, and what to close.
func healthProbe(port int, h Health) (probe func(context.Context) error, where string, closeProbe func()) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if h.Check == contract.HealthGRPC {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return func(context.Context) error { return err }, addr, func() {}
		}
		client := healthpb.NewHealthClient(cc)
		return func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return err
			}
			if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("grpc.health.v1.Health/Check: %s", s)
			}
			return nil
		}, "grpc://" + addr + " (grpc.health.v1.Health/Check)", func() { cc.Close() }
	}
	client := &http.Client{Timeout: time.Second}
	url := "http://" + addr + h.Path
	return func(context.Context) error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New("HTTP " + resp.Status)
		}
		return nil
	}, url, func() {}
}
