package arm

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// dependency is one of the arm's running dependencies.
type dependency struct {
	name string
	proc *service.Process
}

// DependencyLog is the log of a dependency beside the service's, capped as it is:
// champion.log → champion.redis.log.
func DependencyLog(serviceLog service.Log, name string) service.Log {
	return service.Log{Path: strings.TrimSuffix(serviceLog.Path, ".log") + "." + name + ".log", MaxBytes: serviceLog.MaxBytes}
}

// StartDependencies starts spec's dependencies in the arm, in order, each ready (within
// service.ready_timeout_seconds) before the next starts: as the arm's user, in its cgroup, on
// its CPUs, each in a session of its own with its log beside serviceLog and its STATE_DIR under
// the service's. The error names the dependency and ends with its own log; what started stays
// until Clear.
func (a *Arm) StartDependencies(ctx context.Context, spec contract.ServiceSpec, ports map[string]int, serviceLog service.Log) ([]contract.DependencyStart, error) {
	if len(spec.Dependencies) == 0 {
		return nil, nil
	}
	in := a.Instance(ports)
	if err := a.makeDependencyDirs(in, spec.Dependencies); err != nil {
		return nil, err
	}
	timeout := time.Duration(spec.ReadyTimeoutSeconds * float64(time.Second))
	var out []contract.DependencyStart
	for _, d := range spec.Dependencies {
		din := in.DependencyInstance(d.Name)
		log := DependencyLog(serviceLog, d.Name)
		var p *service.Process
		fail := func(err error) error {
			if p != nil {
				p.Logged(time.Second)
			}
			return fmt.Errorf("dependency %s: %v; its log (%s) ends:\n%s", d.Name, err, filepath.Base(log.Path), service.LogTail(log.Path, 20))
		}
		start := time.Now()
		var err error
		if p, err = service.StartDependency(d, din, log, a.launchProgram); err != nil {
			return out, fail(err)
		}
		a.deps = append(a.deps, dependency{name: d.Name, proc: p})
		if d.Ready.TCP != "" {
			port := din.PortVars()[d.Ready.TCP]
			err = service.WaitTCP(ctx, port, timeout, p.Exited())
		} else {
			err = a.waitReadyCommand(ctx, d, din, p, timeout)
		}
		if err == nil {
			// Ready, but by a daemon it left behind in a session of its own? It must be its own.
			select {
			case <-p.Exited():
				err = errors.New("exited after its ready check passed")
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err != nil {
			select {
			case <-p.Exited():
				err = fmt.Errorf("%v (%s)", err, p.ExitError())
				if p.ExitError() == "exited with status 0" {
					err = fmt.Errorf("%v: a dependency must stay in the foreground, not daemonize (redis-server: --daemonize no)", err)
				}
			default:
			}
			return out, fail(err)
		}
		dstart := contract.DependencyStart{Name: d.Name, ReadySeconds: time.Since(start).Seconds(), Ports: map[string]int{}}
		for _, name := range append([]string{d.Name}, d.Ports...) {
			dstart.Ports[contract.PortVariable(name)] = ports[name]
		}
		out = append(out, dstart)
	}
	return out, nil
}

// makeDependencyDirs creates each dependency's STATE_DIR as the arm's user (only it may write
// into the arm's STATE_DIR).
func (a *Arm) makeDependencyDirs(in service.Instance, deps []contract.Dependency) error {
	argv := []string{"/bin/mkdir", "-p", "-m", "0700", "--"}
	for _, d := range deps {
		argv = append(argv, in.DependencyInstance(d.Name).StateDir)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := a.runBounded(a.Launch, cmd, 10*time.Second); err != nil {
		return fmt.Errorf("%s: creating the dependencies' STATE_DIR: %v %s", a.Name, err, out.String())
	}
	return nil
}

// waitReadyCommand runs the dependency's ready command (as the dependency runs) until it exits
// 0, the dependency exits, or the timeout; an attempt still running then is killed with its
// session. The last attempt's output is in the error.
func (a *Arm) waitReadyCommand(ctx context.Context, d contract.Dependency, in service.Instance, p *service.Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		cmd, err := service.DependencyCommand(d, in, d.Ready.Command)
		if err != nil {
			return err
		}
		var out limitedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := a.launchProgram(cmd); err != nil {
			return fmt.Errorf("ready.command: cannot start %q: %w", cmd.Path, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-p.Exited():
			a.killSession(cmd.Process.Pid)
			<-done
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			a.killSession(cmd.Process.Pid)
			<-done
			return ctx.Err()
		case <-time.After(time.Until(deadline)):
			a.killSession(cmd.Process.Pid)
			<-done
			err = errors.New("still running at the deadline, killed")
		}
		if err == nil {
			return nil
		}
		last := strings.TrimSpace(err.Error() + ": " + out.String())
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: its ready command %q did not exit 0 in %d attempts (last: %s)", timeout, strings.Join(d.Ready.Command, " "), attempt, last)
		}
		select {
		case <-p.Exited():
			return errors.New("exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// killSession kills the process group a command started in a session of its own leads.
func (a *Arm) killSession(pid int) {
	privilege.Do(privilege.Thread{Caps: a.killCaps()}, func() error { return syscall.Kill(-pid, syscall.SIGKILL) })
}

// isDependency reports whether p is in one of the arm's dependencies' sessions.
func (a *Arm) isDependency(p Proc) bool {
	return slices.ContainsFunc(a.deps, func(d dependency) bool { return p.Sid == d.proc.Pid() })
}

// dependencyProcs are the processes below the arm's dependencies, for an arm with neither a
// cgroup nor a dedicated user to find them by.
func (a *Arm) dependencyProcs() []Proc {
	var out []Proc
	for _, d := range a.deps {
		out = append(out, Descendants(d.proc.Pid())...)
	}
	return out
}

// clearLeftovers kills everything of the arm that is not one of its dependencies (what setup
// left running), and leaves the dependencies serving.
func (a *Arm) clearLeftovers() error {
	if len(a.deps) == 0 {
		return a.Clear()
	}
	return a.sweep(func() []Proc { return slices.DeleteFunc(a.Procs(), a.isDependency) })
}

// stopDependencies asks each dependency to stop (SIGTERM to its session's group), last started
// first, and waits up to grace for them all; Clear then kills whatever is left.
func (a *Arm) stopDependencies(grace time.Duration) {
	deadline := time.After(grace)
	for _, d := range slices.Backward(a.deps) {
		privilege.Do(privilege.Thread{Caps: a.killCaps()}, func() error { return syscall.Kill(-d.proc.Pid(), syscall.SIGTERM) })
		select {
		case <-d.proc.Exited():
		case <-deadline:
			return
		}
	}
}

// DependencyUsage is each running dependency's CPU time so far and memory now, from the
// processes in its session (a process that leaves it is counted as the service's).
func (a *Arm) DependencyUsage() map[string]Usage {
	out := map[string]Usage{}
	if len(a.deps) == 0 {
		return out
	}
	procs := a.Procs()
	for _, d := range a.deps {
		u := Usage{At: time.Now(), OK: true}
		for _, p := range procs {
			if p.Sid == d.proc.Pid() {
				u.CPUUs += p.CPUUs
				u.RSSBytes += p.RSSBytes
			}
		}
		out[d.name] = u
	}
	return out
}
