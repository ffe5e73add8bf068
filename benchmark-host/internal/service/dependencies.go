package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// validateDependencies checks service.dependencies: names and ports that are variables of
// their own (none the same as another's or as one of service.ports), argv lists that name only
// what expands, and a ready check naming one of the dependency's own ports.
func validateDependencies(s *contract.ServiceSpec) error {
	if err := contract.Dependencies.Check(len(s.Dependencies)); err != nil {
		return fmt.Errorf("service.dependencies: %w", err)
	}
	owner := map[string]string{}
	for i, p := range s.Ports {
		owner[p] = fmt.Sprintf("service.ports[%d]", i)
	}
	claim := func(field, name string) error {
		if prev, ok := owner[name]; ok {
			return fmt.Errorf("%s: %q is %s already: each port (and each dependency, which is its own port $%s) needs a name of its own", field, name, prev, contract.PortVariable(name))
		}
		owner[name] = field
		return nil
	}
	for i, d := range s.Dependencies {
		field := fmt.Sprintf("service.dependencies[%d]", i)
		if err := contract.PortName.Check(d.Name); err != nil {
			return fmt.Errorf("%s.name: %w", field, err)
		}
		if err := claim(field+".name", d.Name); err != nil {
			return err
		}
		if err := contract.PortNames.Check(d.Ports); err != nil {
			return fmt.Errorf("%s.ports%s", field, prefixed(err))
		}
		for j, p := range d.Ports {
			if err := claim(fmt.Sprintf("%s.ports[%d]", field, j), p); err != nil {
				return err
			}
		}
	}
	vars := contract.ServiceVariables(contract.ServicePortNames(*s))
	delete(vars, contract.VarPort) // a dependency has no main port: it must not take the service's
	for i, d := range s.Dependencies {
		field := fmt.Sprintf("service.dependencies[%d]", i)
		if len(d.Command) < contract.AtLeastOne.Min || d.Command[0] == "" {
			return fmt.Errorf("%s.command: required, an argv list such as [\"/usr/bin/redis-server\", \"--port\", \"$PORT_%s\"]", field, strings.ToUpper(d.Name))
		}
		if err := checkDependencyArgv(field+".command", d.Command, vars); err != nil {
			return err
		}
		if err := checkEnv(field+".env", d.Env, "", vars); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(d.Env)) {
			if usesMainPort(d.Env[k], vars) {
				return fmt.Errorf("%s.env.%s: $PORT is the service's port, not a dependency's: use its own $%s", field, k, contract.PortVariable(d.Name))
			}
		}
		if err := checkReady(field+".ready", d, vars); err != nil {
			return err
		}
	}
	return nil
}

// checkReady checks that a dependency's ready names one check: a port of its own, or a command.
func checkReady(field string, d contract.Dependency, vars map[string]string) error {
	own := []string{contract.PortVariable(d.Name)}
	for _, p := range d.Ports {
		own = append(own, contract.PortVariable(p))
	}
	switch r := d.Ready; {
	case r.TCP != "" && len(r.Command) > 0:
		return fmt.Errorf("%s: one of tcp or command, not both", field)
	case r.TCP != "":
		if !slices.Contains(own, r.TCP) {
			return fmt.Errorf("%s.tcp: %q is not a port of this dependency: name one of %s (the variable, as command names it)", field, r.TCP, strings.Join(own, ", "))
		}
	case len(r.Command) > 0:
		if r.Command[0] == "" {
			return fmt.Errorf("%s.command[0]: the program to run, such as /usr/bin/redis-cli", field)
		}
		return checkDependencyArgv(field+".command", r.Command, vars)
	default:
		return fmt.Errorf("%s: required: {tcp: %s} (a TCP connect to it succeeds) or {command: [...]} (exits 0)", field, own[0])
	}
	return nil
}

// checkDependencyArgv is checkArgv, also refusing $PORT: the main port is the service's.
func checkDependencyArgv(field string, argv []string, vars map[string]string) error {
	if err := checkArgv(field, argv, vars); err != nil {
		return err
	}
	for i, a := range argv {
		if usesMainPort(a, vars) {
			return fmt.Errorf("%s[%d]: %q: $PORT is the service's port, not a dependency's: use its own $PORT_<NAME>", field, i, a)
		}
	}
	return nil
}

// usesMainPort reports whether s names $PORT or ${PORT}, given the other variables that expand.
func usesMainPort(s string, vars map[string]string) bool {
	probe := maps.Clone(vars)
	probe[contract.VarPort] = "\x00"
	out, err := contract.ExpandArg(s, probe)
	return err == nil && strings.ContainsRune(out, 0)
}

// DependencyInstance is where a dependency of the instance runs: the same directory and extra
// ports, no main port, and STATE_DIR its own directory under the service's.
func (in Instance) DependencyInstance(name string) Instance {
	return Instance{Dir: in.Dir, Ports: in.Ports, StateDir: filepath.Join(in.StateDir, contract.DependencyStateDir, name)}
}

// StartDependency launches a dependency in its instance (see DependencyInstance) as Start does
// the service: its own session, its log, its ports checked free first.
func StartDependency(d contract.Dependency, in Instance, log Log, launch func(*exec.Cmd) error) (*Process, error) {
	cmd, err := DependencyCommand(d, in, d.Command)
	if err != nil {
		return nil, err
	}
	return startProcess("dependency "+d.Name, cmd, in, append([]string{d.Name}, d.Ports...), log, launch)
}

// DependencyCommand prepares argv (the dependency's command or its ready command) with the
// dependency's environment.
func DependencyCommand(d contract.Dependency, in Instance, argv []string) (*exec.Cmd, error) {
	cmd, err := in.command(argv, "", d.Env)
	if err != nil {
		return nil, fmt.Errorf("dependency %s: %w", d.Name, err)
	}
	return cmd, nil
}

// WaitTCP waits until 127.0.0.1:port accepts a connection, the process exits (exited closes),
// or the timeout.
func WaitTCP(ctx context.Context, port int, timeout time.Duration, exited <-chan struct{}) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	last, err := poll(ctx, time.Now().Add(timeout), exited, func(context.Context) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	switch {
	case errors.Is(err, errExited):
		return errors.New("exited before it was ready")
	case errors.Is(err, errDeadline):
		return fmt.Errorf("not ready after %v: nothing accepted a TCP connection on %s (last: %s)", timeout, addr, last)
	}
	return err
}
