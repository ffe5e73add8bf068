// Package armstart starts a build in an arm the way every arm starts one
// (docs/design/0013-symmetric-starts.md): the champion supervisor's champion, a promotion's
// candidate and both arms of a run.
package armstart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Start is one arm starting a build the way every arm starts one: a fresh copy of the release
// owned by the arm's user, STATE_DIR emptied (unless the service's state is persistent), its
// dependencies each ready, service.setup, then a new process with its ports, until it is
// healthy. The champion supervisor, a promotion's candidate and both arms of a run all start
// this way; a run takes its two arms through each step together (Together), so neither starts
// warmer.
type Start struct {
	Arm   *arm.Arm
	Name  string // champion, challenger, candidate champion
	SHA   string
	Spec  contract.ServiceSpec
	Log   service.Log // the service's log, which setup's output goes to first
	ports map[string]int
	iso   *isolation.Isolation // keeps the arm to its own ports
	// release is the deployed build's directory, which the arm gets a fresh copy of.
	release string
	// logf receives what each step did, in the order of the arms, once every arm has done it.
	logf  func(format string, args ...any)
	notes []string

	Proc   *service.Process  // the service, once started
	Record contract.ArmStart // how it started, for the run's result
	// What each dependency had used when it was ready, by name.
	depsAtReady map[string]arm.Usage
}

// Build is what an arm starts: a deployed release and the service spec it runs with.
type Build struct {
	SHA     string
	Release string // the release's directory
	Spec    contract.ServiceSpec
}

// New prepares arm a of iso to start build b as name, with its extra ports (service.ports by
// name), logging the service to log and each step to logf.
func New(iso *isolation.Isolation, a *arm.Arm, name string, b Build, ports map[string]int, log service.Log, logf func(string, ...any)) *Start {
	in := a.Instance(ports)
	return &Start{Arm: a, Name: name, SHA: b.SHA, Spec: b.Spec, ports: ports, Log: log, iso: iso, release: b.Release, logf: logf,
		Record: contract.ArmStart{SHA: b.SHA, Ports: in.PortVars(), StateDir: in.StateDir, State: b.Spec.State}}
}

// note keeps a line for logf until flush.
func (s *Start) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// Flush hands the notes of the steps so far to logf.
func (s *Start) Flush() {
	for _, n := range s.notes {
		s.logf("%s", n)
	}
	s.notes = nil
}

// failure is an arm's failure with the tail of its log, when it has one (a service that
// could not be started may have logged nothing yet).
func (s *Start) failure(err error) error {
	if _, serr := os.Stat(s.Log.Path); serr != nil {
		return fmt.Errorf("%s %s %v", s.Name, s.SHA, err)
	}
	return fmt.Errorf("%s %s %v; its log ends:\n%s", s.Name, s.SHA, err, service.LogTail(s.Log.Path, 20))
}

// Install gives the arm its ports and a fresh copy of the build.
func (s *Start) Install() error {
	start := time.Now()
	if err := s.iso.AllowNet(s.Arm, s.Record.Ports); err != nil {
		return fmt.Errorf("%s %s: %w", s.Name, s.SHA, err)
	}
	if err := s.Arm.Install(s.release, s.Spec.State); err != nil {
		return fmt.Errorf("%s %s: %w", s.Name, s.SHA, err)
	}
	s.note("%s %s: a fresh copy in %s (%.2f s); %s (%s)", s.Name, s.SHA, s.Arm.WorkDir(), time.Since(start).Seconds(), s.Arm.Instance(s.ports).Describe(), s.Spec.State)
	if img := s.Arm.Image(); img != nil {
		s.note("%s", imageNote(s.Name, img, s.Arm.User.Name))
	}
	return nil
}

// Setup runs service.setup, when the spec has one.
func (s *Start) Setup() error {
	if len(s.Spec.Setup) == 0 {
		return nil
	}
	took, err := s.Arm.Setup(s.Spec, s.ports, s.Log)
	secs := took.Seconds()
	s.Record.SetupSeconds = &secs
	if err != nil {
		return s.failure(fmt.Errorf("setup failed after %.2f s: %v", secs, err))
	}
	s.note("%s setup: done in %.2f s; its output ends:\n%s", s.Name, secs, indent(service.LogTail(s.Log.Path, 5)))
	return nil
}

// Launch starts the service, once its ports are free: one held by another process fails it
// with a *service.PortTakenError that names the port and, when it can be read, its holder
// (the service never ran: no log to quote).
func (s *Start) Launch() error {
	p, err := s.Arm.StartService(s.Name, s.Spec, s.ports, s.Log)
	var taken *service.PortTakenError
	if errors.As(err, &taken) {
		return fmt.Errorf("%s %s: %w", s.Name, s.SHA, taken)
	}
	if err != nil {
		return s.failure(err)
	}
	s.Proc, s.Record.Started = p, time.Now().UTC()
	return nil
}

// Healthy waits until the service answers its health check.
func (s *Start) Healthy(ctx context.Context) error {
	timeout := time.Duration(s.Spec.HealthTimeoutSeconds * float64(time.Second))
	if err := s.Proc.WaitHealthy(ctx, service.HealthOf(s.Spec), timeout); err != nil {
		// A service that exited at once may still have its last words in the log's pipe: what
		// it said on the way out (cannot open the database) is the line a reader needs.
		select {
		case <-s.Proc.Exited():
			s.Proc.Logged(2 * time.Second)
		default:
		}
		return s.failure(err)
	}
	s.Record.HealthySeconds = time.Since(s.Record.Started).Seconds()
	s.note("%s %s healthy on :%d after %.2f s (pid %d)", s.Name, s.SHA, s.Arm.Port, s.Record.HealthySeconds, s.Proc.Pid())
	return nil
}

// OwnsPorts checks that whatever listens on the arm's ports runs as the arm's own user. Both arms
// start together, so the champion port is free while the challenger starts: a challenger that
// took it first and served it (slowly) would otherwise be measured as the champion. Without a
// user of its own per arm (local mode) there is nothing to tell them apart by.
func (s *Start) OwnsPorts() error {
	if !s.Arm.Dedicated {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.Record.Ports)) {
		port := s.Record.Ports[name]
		for _, uid := range service.ListenerUIDs(port) {
			if uid != s.Arm.User.UID {
				who := strconv.FormatUint(uint64(uid), 10)
				if u, err := user.LookupId(who); err == nil {
					who = u.Username + " (uid " + who + ")"
				}
				return fmt.Errorf("%s %s: its port %d (%s) is served by %s, not by its own user %s: another process took it, and the run cannot tell which arm it measures", s.Name, s.SHA, port, name, who, s.Arm.User.Name)
			}
		}
	}
	return nil
}

// Stop ends the arm's service and everything it started.
func (s *Start) Stop() error {
	s.dependencyUsage()
	if s.Proc == nil {
		return s.Arm.Clear()
	}
	return s.Arm.Stop(s.Proc, 10*time.Second)
}

// MeasureDisk records what the stopped arm left on disk: its working copy and STATE_DIR.
func (s *Start) MeasureDisk() {
	work, state, err := s.Arm.DiskUsage()
	if err != nil {
		s.logf("%s: could not measure its disk use: %v", s.Name, err)
		return
	}
	s.Record.WorkBytes, s.Record.StateBytes = &work, &state
	s.logf("%s left %s in its working copy and %s in STATE_DIR", s.Name, megabytes(work), megabytes(state))
}

// RecordLog keeps what a report needs of the stopped arm's log: its last lines, and how much
// of it the cap cut.
func (s *Start) RecordLog() {
	if s.Proc != nil {
		s.Proc.Logged(2 * time.Second)
	}
	s.Record.LogTail = service.LogTail(s.Log.Path, 20)
	s.Record.LogCutBytes = s.Log.Cut()
	if s.Record.LogCutBytes > 0 {
		s.logf("%s: its log was cut by %s, past --max-arm-log-bytes", s.Name, megabytes(s.Record.LogCutBytes))
	}
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// ArmError is the failure of one arm's start: which arm, and what happened.
type ArmError struct {
	Arm string // contract.Champion or contract.Challenger (a candidate is the challenger arm)
	Err error
}

func (e *ArmError) Error() string { return e.Err.Error() }

func (e *ArmError) Unwrap() error { return e.Err }

// Together takes the arms through each step of a start at the same time: copies, then
// setups, then the processes back to back, then the health checks, so that both are as old and
// as warm when the load begins; last, that each arm's ports are its own. A failure (an
// *ArmError naming the first arm that failed) comes after every arm has been stopped.
func Together(ctx context.Context, arms []*Start) error {
	launchAll := func(arms []*Start) error {
		for _, s := range arms {
			if err := s.Launch(); err != nil {
				return &ArmError{Arm: s.Arm.Name, Err: err}
			}
		}
		return nil
	}
	for _, step := range []func([]*Start) error{
		Each((*Start).Install),
		Each(func(s *Start) error { return s.Dependencies(ctx) }),
		Each((*Start).Setup),
		launchAll,
		Each(func(s *Start) error { return s.Healthy(ctx) }),
		Each((*Start).OwnsPorts),
	} {
		err := step(arms)
		for _, s := range arms {
			s.Flush()
		}
		if err != nil {
			for _, s := range arms {
				s.Stop()
			}
			return err
		}
	}
	return nil
}

// Each makes a step that runs for every arm in parallel; its error (an *ArmError) names the
// first arm that failed and says what failed in each.
func Each(step func(*Start) error) func([]*Start) error {
	return func(arms []*Start) error {
		errs := make([]error, len(arms))
		var wg sync.WaitGroup
		for i, s := range arms {
			wg.Go(func() { errs[i] = step(s) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return &ArmError{Arm: arms[i].Arm.Name, Err: errors.Join(errs...)}
			}
		}
		return nil
	}
}

func indent(text string) string {
	return "  | " + strings.ReplaceAll(text, "\n", "\n  | ")
}

// imageNote says how an arm runs its container image: always as the arm's own user, whatever
// user the image asks for.
func imageNote(arm string, img *image.Config, user string) string {
	asks := fmt.Sprintf("user %q", img.User)
	if img.AsksForRoot() {
		asks = "root"
	}
	return fmt.Sprintf("%s: container image %s (%d layers), run by runc; the image asks for %s and runs as the arm's user %s (uid 0 of its own user namespace, without capabilities)", arm, img.Digest, img.Layers, asks, user)
}
