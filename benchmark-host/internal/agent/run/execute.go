package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/armstart"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/profile"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// failure ends a run: its error kind (challenger_unhealthy, …) and what happened.
type failure struct {
	kind    contract.ErrorKind
	message string
}

func (f *failure) Error() string { return string(f.kind) + ": " + f.message }

func fail(kind contract.ErrorKind, format string, args ...any) error {
	return &failure{kind: kind, message: fmt.Sprintf(format, args...)}
}

// errAborted ends a run that was asked to stop; its finished slices are kept.
var errAborted = errors.New("the run was aborted")

// errOverran is the cause of a run stopped at its deadline.
var errOverran = errors.New("the run overran --max-run-seconds")

// execution is one detached run: its record (progress log, result, outcome) and the result it
// builds up.
type execution struct {
	*Runs
	runID    string
	rec      *runRecord
	outcome  contract.Outcome
	result   contract.HostResult
	measured bool         // the load generator ran: there is a result to keep
	wipe     []*arm.Arm   // arms that filled their disk: everything they wrote goes after the stop
	profiles *profile.Run // both arms' CPU sampling, when the run request asked for it
}

// Execute is the detached run: it ends by writing outcome.json, and its exit frees the lock.
func (r *Runs) Execute(ctx context.Context, runID string) error {
	store.KeepInheritedLock()
	rec, err := openRecord(r.store, runID)
	if err != nil {
		return err
	}
	e := &execution{Runs: r, runID: runID, rec: rec,
		outcome: contract.Outcome{RunID: runID, Started: time.Now().UTC(), Status: contract.StatusError}}
	// A run never holds the host past --max-run-seconds (plus a minute to stop), whatever hangs.
	ctx, cancel := context.WithTimeoutCause(ctx, time.Duration(r.cfg.MaxRunSeconds*float64(time.Second))+time.Minute, errOverran)
	defer cancel()
	return e.finish(ctx, e.run(ctx))
}

func (e *execution) logf(format string, args ...any) { e.rec.logf(format, args...) }

// run goes through the run's steps; the first to fail ends it.
func (e *execution) run(ctx context.Context) error {
	req, lp, err := e.prepare(ctx)
	if err != nil {
		return err
	}
	e.logf("%s run %s started", e.outcome.Kind, e.runID)
	if err := e.preflight(ctx, e.outcome.Kind); err != nil {
		return err
	}
	iso, err := e.iso.Arms()
	if err != nil {
		return fail(contract.ErrorInternal, "%v", err)
	}
	e.result.Isolation = &iso.Info
	e.logf("isolation: %s", iso.Summary())
	st, err := e.store.LoadState()
	if err != nil {
		return fail(contract.ErrorInternal, "%v", err)
	}
	specChanged, err := e.championSpec(req, st)
	if err != nil {
		return err
	}
	// The run starts its own champion, as it starts the challenger; the supervisor's champion
	// serves the port again before the run reports, however the run ends.
	defer e.giveBackChampionPort()
	how, err := e.champion.TakePort(e.runID, st)
	if err != nil {
		return fail(contract.ErrorChampionUnhealthy, "the champion supervisor did not hand over :%d: %v", e.cfg.ChampionPort, err)
	}
	e.logf("the champion port :%d is this run's: %s; both arms start fresh", e.cfg.ChampionPort, how)
	arms, err := e.startArms(ctx, iso, req)
	if err != nil {
		return err
	}
	e.result.Identity = e.identity(iso, lp, arms, specChanged)
	if req.Profile {
		// After the start: each arm's cgroup is the one its processes live in for the run.
		e.profiles = profile.StartRun(e.profileConfig(arms))
	}
	return e.measureAndStop(ctx, iso, lp, arms)
}

// profileConfig samples each arm's cgroup, naming its frames from the release it runs.
func (e *execution) profileConfig(arms []*armstart.Start) profile.Config {
	cfg := profile.Config{Dir: e.store.RunDir(e.runID), FrequencyHz: profile.DefaultFrequencyHz}
	for _, s := range arms {
		a := profile.Arm{Name: s.Arm.Name, Work: s.Arm.WorkDir(), Release: e.store.ReleaseDir(s.SHA)}
		if s.Arm.Group != nil {
			a.Cgroup = profile.CgroupName(s.Arm.Group.Path)
		}
		cfg.Arms = append(cfg.Arms, a)
	}
	return cfg
}

// finishProfiles stops the sampling once the load is over and, when the run measured, writes
// each arm's profile beside the result (a host that could not sample says why).
func (e *execution) finishProfiles() {
	if e.profiles == nil {
		return
	}
	p := e.profiles.Finish(e.result.Slices, e.store.RunDir(e.runID))
	if !e.measured {
		return
	}
	e.result.Profiles = p
	if p.Status != contract.ProfilesRecorded {
		e.logf("profiles: not available (%s)", p.Reason)
		return
	}
	e.logf("profiles: champion %d samples (%d bytes), challenger %d samples (%d bytes); perf used %.2f CPU s",
		p.Arms[contract.Champion].Samples, p.Arms[contract.Champion].Bytes, p.Arms[contract.Challenger].Samples, p.Arms[contract.Challenger].Bytes, p.CPUSeconds)
}

// prepare reads the run's request and compiles its plan, with each arm's descriptor sets.
func (e *execution) prepare(ctx context.Context) (contract.RunRequest, *plan.Plan, error) {
	req, err := e.store.RunRequest(e.runID)
	if err != nil {
		return req, nil, fail(contract.ErrorInternal, "%v", err)
	}
	e.outcome.Kind = req.Loadgen.Builds.Kind
	lp, err := plan.Compile(req.Loadgen, e.store.RunDir(e.runID), generatorCPUs(e.cfg))
	if err != nil {
		return req, nil, fail(contract.ErrorInternal, "%v", err)
	}
	if err := e.readDescriptorSets(ctx, lp); err != nil {
		return req, nil, fail(contract.ErrorPlan, "%v", err)
	}
	return req, lp, nil
}

// championSpec checks that the champion is still the one the run was asked for, and says
// whether the champion arm runs it with another spec than it was promoted with. Both arms run
// with the run's service spec, the config that asked for the run: the champion's build (or the
// merge base, or an ancestor in a drift run) as the challenger's. The spec it was promoted with stays the supervisor's,
// between runs.
func (e *execution) championSpec(req contract.RunRequest, st store.State) (changed bool, err error) {
	if base := req.Loadgen.Builds.Base; base == contract.BaseMergeBase || base == contract.BaseAncestor {
		return false, nil
	}
	if st.Champion != req.Loadgen.Builds.ChampionSHA {
		return false, fail(contract.ErrorInternal, "the champion is %s, not %s as when the run was asked for", st.Champion, req.Loadgen.Builds.ChampionSHA)
	}
	if changed = contract.Digest(req.Service) != contract.Digest(st.Service); changed {
		e.logf("the champion arm runs champion %s with this run's service spec, not the one it was promoted with", st.Champion)
	}
	return changed, nil
}

// measureAndStop measures with both arms started, checks that each still owns its ports, and
// stops both, with everything they started, before anything is reported.
func (e *execution) measureAndStop(ctx context.Context, iso *isolation.Isolation, lp *plan.Plan, arms []*armstart.Start) error {
	stop := sync.OnceValue(func() error { return e.stopArms(arms) })
	defer stop()
	measureErr := e.measure(ctx, iso, lp, arms)
	e.finishProfiles()
	if err := armstart.Each((*armstart.Start).OwnsPorts)(arms); err != nil && measureErr == nil {
		var ae *armstart.ArmError
		errors.As(err, &ae)
		measureErr = fail(contract.ArmUnhealthy.Of(ae.Arm), "%v", err)
	}
	if err := stop(); err != nil {
		return err
	}
	if measureErr != nil {
		return measureErr
	}
	e.logf("done: %d slices", len(e.result.Slices))
	return nil
}

// preflight records the host's checks in the result; a refusal ends the run.
func (e *execution) preflight(ctx context.Context, kind string) error {
	e.result.Preflight = hostChecks(e.cfg, e.store, e.iso.Get(), kind)
	for _, f := range e.result.Preflight {
		e.logf("preflight %s: %s: %s", f.Check, f.Status, f.Detail)
	}
	if r := contract.FindingsWith(e.result.Preflight, contract.FindingRefuse); len(r) > 0 {
		return fail(contract.ErrorPreflight, "host refused the run: %s", strings.Join(r, "; "))
	}
	quiet := settle(ctx, e.cfg, e.logf)
	e.logf("preflight %s: %s: %s", quiet.Check, quiet.Status, quiet.Detail)
	e.result.Preflight = append(e.result.Preflight, quiet)
	return nil
}

// startArms starts the champion arm and the challenger together with the run's service spec,
// each a new process in a fresh copy of its build with ports of its own; a failure is the
// failing arm's, with its log tail.
func (e *execution) startArms(ctx context.Context, iso *isolation.Isolation, req contract.RunRequest) ([]*armstart.Start, error) {
	b := req.Loadgen.Builds
	ports, err := service.AllocatePorts(e.cfg.PortRange(), [][]string{contract.ServicePortNames(req.Service), contract.ServicePortNames(req.Service)}, e.cfg.MainPorts())
	if err != nil {
		return nil, fail(contract.ErrorPreflight, "host refused the run: %v", err)
	}
	build := func(sha string) armstart.Build {
		return armstart.Build{SHA: sha, Release: e.store.ReleaseDir(sha), Spec: req.Service}
	}
	arms := []*armstart.Start{
		armstart.New(iso, iso.Champion, contract.Champion, build(b.ChampionSHA), ports[0], e.cfg.ArmLog(e.store.Path("runs", e.runID, "champion.log")), e.logf),
		armstart.New(iso, iso.Challenger, contract.Challenger, build(b.ChallengerSHA), ports[1], e.cfg.ArmLog(e.store.Path("runs", e.runID, "challenger.log")), e.logf),
	}
	if err := armstart.Together(ctx, arms); err != nil {
		if stopped := e.stoppedBy(ctx); stopped != nil {
			return nil, stopped
		}
		// A port another process holds is the host's state, not the build's doing: a
		// challenger's port taken must not fail the pull request as its build's failure.
		if taken := (*service.PortTakenError)(nil); errors.As(err, &taken) {
			return nil, fail(contract.ErrorPreflight, "%v", err)
		}
		var ae *armstart.ArmError
		errors.As(err, &ae)
		return nil, fail(contract.ArmUnhealthy.Of(ae.Arm), "%v", err)
	}
	return arms, nil
}

// stoppedBy is why the run was stopped from outside (its deadline, or abort), if it was.
func (e *execution) stoppedBy(ctx context.Context) error {
	switch {
	case errors.Is(context.Cause(ctx), errOverran):
		return fail(contract.ErrorOverran, "the run went past --max-run-seconds %g and was stopped", e.cfg.MaxRunSeconds)
	case ctx.Err() != nil:
		return errAborted
	}
	return nil
}

// stopArms stops both arms and records how each started and what it left on disk.
func (e *execution) stopArms(arms []*armstart.Start) error {
	start := time.Now()
	if err := armstart.Each((*armstart.Start).Stop)(arms); err != nil {
		var ae *armstart.ArmError
		errors.As(err, &ae)
		return fail(contract.ArmNotStopped.Of(ae.Arm), "the %s's processes could not all be stopped: %v", ae.Arm, err)
	}
	e.logf("both arms stopped in %.2f s: nothing of either runs", time.Since(start).Seconds())
	e.result.Arms = map[string]contract.ArmStart{}
	for _, s := range arms {
		s.MeasureDisk()
		s.RecordLog()
		e.result.Arms[s.Arm.Name] = s.Record
	}
	for _, a := range e.wipe {
		if err := a.Wipe(); err != nil {
			return fail(contract.ArmNotStopped.Of(a.Name), "%v", err)
		}
		e.logf("%s: everything it wrote is removed", a.Name)
	}
	return nil
}

// giveBackChampionPort hands the champion port back to the supervisor and waits until the
// champion serves there again: a run never leaves it dead, whatever stopped the run.
func (e *execution) giveBackChampionPort() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.champion.ReturnPort(ctx); err != nil {
		e.logf("the champion is not serving on :%d again: %v", e.cfg.ChampionPort, err)
		return
	}
	e.logf("the champion serves on :%d again (its supervisor's)", e.cfg.ChampionPort)
}

// finish writes the result (if any load was sent) and the outcome, and ends the progress log
// with the outcome marker line that `wait` returns on; a write that fails fails the run.
func (e *execution) finish(ctx context.Context, err error) error {
	var f *failure
	switch {
	case err == nil:
		e.outcome.Status = contract.StatusOK
	case errors.Is(err, errAborted):
		e.outcome.Status, e.outcome.ErrorKind, e.outcome.Message = contract.StatusAborted, contract.ErrorAborted, err.Error()
		e.logf("aborted")
	case errors.As(err, &f):
		e.outcome.ErrorKind, e.outcome.Message = f.kind, f.message
	}
	var result *contract.HostResult
	if e.measured {
		result = &e.result
	}
	return e.rec.finish(e.outcome, result)
}

// readDescriptorSets reads a grpc plan's proto_descriptor_set from each arm's release, through
// os.Root so that no path or link reaches outside it: each arm's messages are encoded with
// the descriptors its own build ships.
func (e *execution) readDescriptorSets(ctx context.Context, lp *plan.Plan) error {
	if !lp.Described() {
		return nil
	}
	shas := [2]string{lp.Builds.ChampionSHA, lp.Builds.ChallengerSHA}
	for arm, sha := range shas {
		root, err := os.OpenRoot(e.store.ReleaseDir(sha))
		if err != nil {
			return err
		}
		var b []byte
		if len(lp.ProtoFiles) > 0 {
			var fe *plan.FieldError
			if b, err = lp.CompileProtoFiles(ctx, root.FS()); errors.As(err, &fe) {
				err = fmt.Errorf("plan: loadgen.%s: the %s's build %s: %s", fe.Field, []string{contract.Champion, contract.Challenger}[arm], sha, fe.Msg)
			}
		} else if b, err = root.ReadFile(lp.ProtoDescriptorSet); err != nil {
			err = fmt.Errorf("plan: loadgen.proto_descriptor_set: the %s's build %s has no readable %q: %v", []string{contract.Champion, contract.Challenger}[arm], sha, lp.ProtoDescriptorSet, errors.Unwrap(err))
		}
		root.Close()
		if err != nil {
			return err
		}
		lp.DescriptorSets[arm] = b
	}
	return nil
}
