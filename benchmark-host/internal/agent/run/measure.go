package run

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/armstart"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/loadgen"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// armCrash is an arm's service exiting while the load runs.
type armCrash struct{ arm *armstart.Start }

func (c *armCrash) Error() string { return c.arm.Name + " crashed" }

// armFailed is an arm failing while the load runs without exiting: out of its disk, or of
// its memory.
type armFailed struct {
	arm     *armstart.Start
	failure contract.ArmFailure
	message string
}

func (f *armFailed) Error() string { return f.message }

// measure runs the load generator, cut short if either arm's service exits or the run is
// aborted, and samples both arms at every slice boundary for the slices' resource fields.
func (e *execution) measure(ctx context.Context, iso *isolation.Isolation, lp *plan.Plan, arms []*armstart.Start) error {
	loadCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, s := range arms {
		go func() {
			select {
			case <-s.Proc.Exited():
				cancel(&armCrash{s})
			case <-loadCtx.Done():
			}
		}()
	}
	byName := map[string]*armstart.Start{}
	for _, s := range arms {
		byName[s.Arm.Name] = s
	}
	failArm := func(name string, failure contract.ArmFailure, message string) {
		cancel(&armFailed{byName[name], failure, message})
	}
	acc := newSliceAccounting(e.cfg, iso, failArm)
	if e.profiles != nil {
		acc.sampler = e.profiles.CPU
	}
	oomBefore := acc.oomKills()
	res, err := loadgen.Run(loadCtx, lp, lineWriter{e.logf}, e.loadOptions(acc)...)
	if loadCtx.Err() == nil && err == nil {
		acc.AfterLoad(len(res.Slices)) // the OOM killer may have struck after the last boundary
	}
	cause := context.Cause(loadCtx)
	cancel(nil) // the load is over: an arm's exit from here on is its stop, not a crash
	if err != nil {
		return fail(contract.ErrorLoadgen, "%v", err)
	}
	e.result.Result, e.measured = *res, true
	e.result.ResourceAccounting = map[string]contract.ResourceAccounting{
		contract.Champion: iso.Champion.Accounting(), contract.Challenger: iso.Challenger.Accounting()}
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		if note := iso.RefusedNote(a); note != "" {
			e.logf("%s", note)
		}
	}
	if crash := (*armCrash)(nil); errors.As(cause, &crash) {
		s := crash.arm
		s.Proc.Logged(time.Second)
		if why, ok := isolation.KilledForMemory(s.Arm, acc.oomKills() > oomBefore && strings.Contains(s.Proc.ExitError(), "killed")); ok {
			return fail(contract.ArmOutOfMemory.Of(s.Arm.Name), "%s (%s %s); its log ends:\n%s", why, s.Name, s.SHA, service.LogTail(s.Log.Path, 20))
		}
		return fail(contract.ArmCrashed.Of(s.Arm.Name), "%s %s %s during the run; its log ends:\n%s", s.Name, s.SHA, s.Proc.ExitError(), service.LogTail(s.Log.Path, 20))
	}
	if failed := (*armFailed)(nil); errors.As(cause, &failed) {
		s := failed.arm
		if failed.failure == contract.ArmOutOfDisk {
			e.wipe = append(e.wipe, s.Arm)
			return fail(failed.failure.Of(s.Arm.Name), "%s (%s %s); the run's measurements up to then are kept, and everything it wrote is removed", failed.message, s.Name, s.SHA)
		}
		return fail(failed.failure.Of(s.Arm.Name), "%s (%s %s); the run's measurements up to then are kept", failed.message, s.Name, s.SHA)
	}
	return e.stoppedBy(ctx)
}

// loadOptions are the load generator's: slice accounting always, and the CPUs held awake when
// the host asks for it.
func (e *execution) loadOptions(acc *sliceAccounting) []loadgen.Option {
	opts := []loadgen.Option{loadgen.WithSliceObserver(acc)}
	if e.cfg.HoldCPUsAwake {
		opts = append(opts, loadgen.WithCPUsHeldAwake(openDevice))
	}
	return opts
}

// openDevice opens a root-owned device for writing (the PM QoS device the load generator holds
// during a run) with CAP_DAC_OVERRIDE raised for that one open.
func openDevice(path string) (f *os.File, err error) {
	err = privilege.Do(privilege.Thread{Caps: []privilege.Cap{privilege.DACOverride}}, func() error {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
		return err
	})
	return f, err
}

// lineWriter turns the load generator's progress lines into timestamped log lines.
type lineWriter struct{ logf func(string, ...any) }

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.logf("%s", line)
	}
	return len(p), nil
}
