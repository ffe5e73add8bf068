package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// armStart is one arm starting a build the way every arm starts one
// (docs/design/0013-symmetric-starts.md): a fresh copy of the release owned by the arm's user,
// STATE_DIR emptied (unless the service's state is persistent), its dependencies each ready,
// service.setup, then a new process with its ports, until it is healthy. The champion supervisor, a
// promotion's candidate and both arms of a run all start this way; a run takes its two arms through
// each step together (startTogether), so neither starts warmer.
type armStart struct {
	arm   *arm.Arm
	name  string // champion, challenger, candidate champion
	sha   string
	spec  contract.ServiceSpec
	ports map[string]int // service.ports by name
	log   service.Log    // the service's log, which setup's output goes to first
	// logf receives what each step did, in the order of the arms, once every arm has done it.
	logf  func(format string, args ...any)
	notes []string

	proc   *service.Process
	record contract.ArmStart
	// What each dependency had used when it was ready, by name.
	depsAtReady map[string]arm.Usage
}

func newArmStart(a *arm.Arm, name, sha string, spec contract.ServiceSpec, ports map[string]int, log service.Log, logf func(string, ...any)) *armStart {
	in := a.Instance(ports)
	return &armStart{arm: a, name: name, sha: sha, spec: spec, ports: ports, log: log, logf: logf,
		record: contract.ArmStart{SHA: sha, Ports: in.PortVars(), StateDir: in.StateDir, State: spec.State}}
}

// note keeps a line for logf until flush.
func (s *armStart) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

func (s *armStart) flush() {
	for _, n := range s.notes {
		s.logf("%s", n)
	}
	s.notes = nil
}

// armFailure is an arm's failure with the tail of its log.
func (s *armStart) failure(err error) error {
	return fmt.Errorf("%s %s %v; its log ends:\n%s", s.name, s.sha, err, service.LogTail(s.log.Path, 20))
}

func (s *armStart) install(h *Host) error {
	start := time.Now()
	if err := h.isolation().allowNet(s.arm, s.record.Ports); err != nil {
		return fmt.Errorf("%s %s: %w", s.name, s.sha, err)
	}
	if err := s.arm.Install(h.releaseDir(s.sha), s.spec.State); err != nil {
		return fmt.Errorf("%s %s: %w", s.name, s.sha, err)
	}
	s.note("%s %s: a fresh copy in %s (%.2f s); %s (%s)", s.name, s.sha, s.arm.WorkDir(), time.Since(start).Seconds(), s.arm.Instance(s.ports).Describe(), s.spec.State)
	if img := s.arm.Image(); img != nil {
		s.note("%s", imageNote(s.name, img, s.arm.User.Name))
	}
	return nil
}

func (s *armStart) setup() error {
	if len(s.spec.Setup) == 0 {
		return nil
	}
	took, err := s.arm.Setup(s.spec, s.ports, s.log)
	secs := took.Seconds()
	s.record.SetupSeconds = &secs
	if err != nil {
		return s.failure(fmt.Errorf("setup failed after %.2f s: %v", secs, err))
	}
	s.note("%s setup: done in %.2f s; its output ends:\n%s", s.name, secs, indent(service.LogTail(s.log.Path, 5)))
	return nil
}

func (s *armStart) start() error {
	p, err := s.arm.StartService(s.name, s.spec, s.ports, s.log)
	if err != nil {
		return s.failure(err)
	}
	s.proc, s.record.Started = p, time.Now().UTC()
	return nil
}

func (s *armStart) healthy(ctx context.Context) error {
	timeout := time.Duration(s.spec.HealthTimeoutSeconds * float64(time.Second))
	if err := s.proc.WaitHealthy(ctx, service.HealthOf(s.spec), timeout); err != nil {
		return s.failure(err)
	}
	s.record.HealthySeconds = time.Since(s.record.Started).Seconds()
	s.note("%s %s healthy on :%d after %.2f s (pid %d)", s.name, s.sha, s.arm.Port, s.record.HealthySeconds, s.proc.Pid())
	return nil
}

// ownsPorts checks that whatever listens on the arm's ports runs as the arm's own user. Both arms
// start together, so the champion port is free while the challenger starts: a challenger that
// took it first and served it (slowly) would otherwise be measured as the champion. Without a
// user of its own per arm (local mode) there is nothing to tell them apart by.
func (s *armStart) ownsPorts() error {
	if !s.arm.Dedicated {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(s.record.Ports)) {
		port := s.record.Ports[name]
		for _, uid := range service.ListenerUIDs(port) {
			if uid != s.arm.User.UID {
				who := strconv.FormatUint(uint64(uid), 10)
				if u, err := user.LookupId(who); err == nil {
					who = u.Username + " (uid " + who + ")"
				}
				return fmt.Errorf("%s %s: its port %d (%s) is served by %s, not by its own user %s: another process took it, and the run cannot tell which arm it measures", s.name, s.sha, port, name, who, s.arm.User.Name)
			}
		}
	}
	return nil
}

// stop ends the arm's service and everything it started.
func (s *armStart) stop() error {
	s.dependencyUsage()
	if s.proc == nil {
		return s.arm.Clear()
	}
	return s.arm.Stop(s.proc, 10*time.Second)
}

// measureDisk records what the stopped arm left on disk: its working copy and STATE_DIR.
func (s *armStart) measureDisk() {
	work, state, err := s.arm.DiskUsage()
	if err != nil {
		s.logf("%s: could not measure its disk use: %v", s.name, err)
		return
	}
	s.record.WorkBytes, s.record.StateBytes = &work, &state
	s.logf("%s left %s in its working copy and %s in STATE_DIR", s.name, megabytes(work), megabytes(state))
}

// recordLog keeps what a report needs of the stopped arm's log: its last lines, and how much
// of it the cap cut.
func (s *armStart) recordLog() {
	if s.proc != nil {
		s.proc.Logged(2 * time.Second)
	}
	s.record.LogTail = service.LogTail(s.log.Path, 20)
	s.record.LogCutBytes = s.log.Cut()
	if s.record.LogCutBytes > 0 {
		s.logf("%s: its log was cut by %s, past --max-arm-log-bytes", s.name, megabytes(s.record.LogCutBytes))
	}
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// armError is the failure of one arm's start: which arm, and what happened.
type armError struct {
	arm string // contract.Champion or contract.Challenger (a candidate is the challenger arm)
	err error
}

func (e *armError) Error() string { return e.err.Error() }

// startTogether takes the arms through each step of a start at the same time: copies, then
// setups, then the processes back to back, then the health checks, so that both are as old and
// as warm when the load begins; last, that each arm's ports are its own. A failure (an *armError naming the first arm that failed) comes
// after every arm has been stopped.
func startTogether(ctx context.Context, h *Host, arms []*armStart) error {
	startAll := func(arms []*armStart) error {
		for _, s := range arms {
			if err := s.start(); err != nil {
				return &armError{arm: s.arm.Name, err: err}
			}
		}
		return nil
	}
	for _, step := range []func([]*armStart) error{
		eachArm(func(s *armStart) error { return s.install(h) }),
		eachArm(func(s *armStart) error { return s.dependencies(ctx) }),
		eachArm((*armStart).setup),
		startAll,
		eachArm(func(s *armStart) error { return s.healthy(ctx) }),
		eachArm((*armStart).ownsPorts),
	} {
		err := step(arms)
		for _, s := range arms {
			s.flush()
		}
		if err != nil {
			for _, s := range arms {
				s.stop()
			}
			return err
		}
	}
	return nil
}

// eachArm makes a step that runs for every arm in parallel; its error names the first arm
// that failed and says what failed in each.
func eachArm(step func(*armStart) error) func([]*armStart) error {
	return func(arms []*armStart) error {
		errs := make([]error, len(arms))
		var wg sync.WaitGroup
		for i, s := range arms {
			wg.Go(func() { errs[i] = step(s) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return &armError{arm: arms[i].arm.Name, err: errors.Join(errs...)}
			}
		}
		return nil
	}
}

func indent(text string) string {
	return "  | " + strings.ReplaceAll(text, "\n", "\n  | ")
}
