package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/loadgen"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// maxRequestBytes bounds a run request read from stdin.
const maxRequestBytes = 1 << 20

// StartRun validates the run request, takes the host lock, and starts the experiment in a
// detached process that holds the lock until it ends, so the run survives the SSH connection.
func (h *Host) StartRun(runID, kind string, stdin io.Reader) (err error) {
	if _, err := os.Stat(h.runDir(runID)); err == nil {
		return refuse("run %s already exists; use a new run-id", runID)
	}
	req, err := h.readRunRequest(runID, kind, stdin)
	if err != nil {
		return err
	}
	lock, err := h.Acquire(kind+" "+runID, h.LockWait)
	if err != nil {
		return err
	}
	// Until the run has started, any failure frees the host again.
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	if err := os.MkdirAll(h.runDir(runID), 0o755); err != nil {
		return err
	}
	if err := writeJSONAtomic(h.path("runs", runID, "run.json"), req); err != nil {
		return err
	}
	return h.startExecutor(runID, kind, lock)
}

// readRunRequest decodes the request strictly, sets what only the host may set (the targets,
// the run's id, the builds and, for an A/A run, the champion's service spec) on the typed
// value, and validates the whole once.
func (h *Host) readRunRequest(runID, kind string, stdin io.Reader) (*contract.RunRequest, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, maxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	if len(raw) > maxRequestBytes {
		return nil, refuse("plan: larger than %d bytes", maxRequestBytes)
	}
	var req contract.RunRequest
	if err := contract.Decode(bytes.NewReader(raw), &req); err != nil {
		return nil, refuse("plan: %v", err)
	}
	if err := service.Validate(&req.Service); err != nil {
		return nil, refuse("plan: %w", err)
	}
	st, err := h.LoadState()
	if err != nil {
		return nil, err
	}
	builds, err := h.buildsOf(kind, &req, st)
	if err != nil {
		return nil, err
	}
	if err := h.commandNeeded(req.Service, builds); err != nil {
		return nil, err
	}
	lg := &req.Loadgen
	if err := hostOwnedFields(lg); err != nil {
		return nil, err
	}
	lg.Targets = &contract.Targets{
		Champion:   fmt.Sprintf("http://127.0.0.1:%d", h.ChampionPort),
		Challenger: fmt.Sprintf("http://127.0.0.1:%d", h.ChallengerPort),
	}
	lg.RunID, lg.Builds = runID, builds
	compiled, err := plan.Compile(*lg, h.runDir(runID), h.generatorCPUs())
	if err != nil {
		var fe *plan.FieldError
		if errors.As(err, &fe) {
			return nil, refuse("plan: loadgen.%s: %s", fe.Field, fe.Msg)
		}
		return nil, refuse("plan: loadgen: %v", err)
	}
	req.Loadgen = compiled.Plan // with its defaults filled
	if err := h.checkRunLength(&req); err != nil {
		return nil, err
	}
	return &req, nil
}

// buildsOf names the builds a run measures, refusing a request that names the wrong ones.
func (h *Host) buildsOf(kind string, req *contract.RunRequest, st State) (*contract.Builds, error) {
	if st.Champion == "" {
		return nil, errors.New("no champion on this host: deploy champion SHA and promote SHA first")
	}
	if req.ChampionSHA != "" && req.ChampionSHA != st.Champion {
		return nil, refuse("plan: champion_sha %s, but the host's champion is %s", req.ChampionSHA, st.Champion)
	}
	b := &contract.Builds{Kind: kind, ChampionSHA: st.Champion, ChallengerSHA: req.ChallengerSHA, Base: contract.BaseChampion}
	switch kind {
	case contract.KindAB:
		if err := h.deployed("challenger_sha", req.ChallengerSHA, "challenger"); err != nil {
			return nil, err
		}
		if req.MergeBaseSHA != "" {
			if req.ChampionSHA != "" {
				return nil, refuse("plan: merge_base_sha: the champion arm runs the merge base, so champion_sha cannot be asked for too")
			}
			if err := h.deployed("merge_base_sha", req.MergeBaseSHA, "champion"); err != nil {
				return nil, err
			}
			b.ChampionSHA, b.Base = req.MergeBaseSHA, contract.BaseMergeBase
		}
	case contract.KindAA:
		if req.ChallengerSHA != "" {
			return nil, refuse("plan: challenger_sha: an A/A run uses the champion on both ports; leave it out")
		}
		if req.MergeBaseSHA != "" {
			return nil, refuse("plan: merge_base_sha: an A/A run measures the champion against itself; leave it out")
		}
		b.ChallengerSHA = st.Champion
	}
	return b, nil
}

// readDescriptorSets reads a grpc plan's proto_descriptor_set from each arm's release, through
// os.Root so that no path or link reaches outside it: each arm's messages are encoded with
// the descriptors its own build ships.
func (h *Host) readDescriptorSets(ctx context.Context, lp *plan.Plan) error {
	if !lp.Described() {
		return nil
	}
	shas := [2]string{lp.Builds.ChampionSHA, lp.Builds.ChallengerSHA}
	for arm, sha := range shas {
		root, err := os.OpenRoot(h.releaseDir(sha))
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

// deployed refuses a run request whose field names no deployed release (role: how to deploy it).
func (h *Host) deployed(field, sha, role string) error {
	if sha == "" {
		return refuse("plan: %s: required for run", field)
	}
	if err := contract.SHA.Check(sha); err != nil {
		return refuse("plan: %s: %v", field, err)
	}
	if _, err := os.Stat(h.releaseDir(sha)); err != nil {
		return refuse("plan: %s: release %q is not deployed (deploy %s SHA first)", field, sha, role)
	}
	return nil
}

// generatorCPUs bounds the plan's generator_cpus by the host's --loadgen-cpus placement:
// more event loops than CPUs would share them and fall behind the schedule.
func (h *Host) generatorCPUs() plan.CompileOption {
	cpus, err := placement.Parse(h.LoadgenCPUs)
	if err != nil {
		return plan.WithGeneratorCPUs(0) // the isolation check names the bad flag
	}
	return plan.WithGeneratorCPUs(len(cpus))
}

// hostOwnedFields refuses what a client may not decide: where the load goes, what it is
// called, and files read on the host (a body_file could send the host's own files to the
// challenger, which is code from a pull request).
func hostOwnedFields(lg *contract.Plan) error {
	switch {
	case lg.Targets != nil:
		return refuse("plan: loadgen.targets: set by the host, leave it out")
	case lg.Builds != nil:
		return refuse("plan: loadgen.builds: set by the host, leave it out")
	}
	if set := lg.ProtoDescriptorSet; set != "" && (filepath.IsAbs(set) || !filepath.IsLocal(set)) {
		return refuse("plan: loadgen.proto_descriptor_set: must be a relative path inside the build (each arm's release), got %q", set)
	}
	for field, paths := range map[string][]string{"proto_files": lg.ProtoFiles, "proto_import_paths": lg.ProtoImportPaths} {
		for i, p := range paths {
			if err := plan.CheckBuildPath(p); err != nil {
				return refuse("plan: loadgen.%s[%d]: %v", field, i, err)
			}
		}
	}
	for i, r := range lg.Requests {
		if r.BodyFile != "" {
			return refuse("plan: loadgen.requests[%d].body_file: not accepted by a host, which would read its own files; send the body", i)
		}
	}
	return nil
}

// startExecutor starts the detached process that runs the experiment and hands it the lock.
func (h *Host) startExecutor(runID, kind string, lock *Lock) error {
	// In the load generator's group, on its CPUs; it holds the lock from here on.
	cmd, err := h.launchDetached(h.path("runs", runID, "executor.log"), func(iso *isolation) *arm.Arm { return iso.loadgen }, []*os.File{lock.File()}, "execute", runID)
	if err != nil {
		return fmt.Errorf("starting the run: %w", err)
	}
	lock.HandOver(kind+" "+runID, cmd.Process.Pid)
	lock.Detach()
	os.WriteFile(h.path("runs", runID, "pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600)
	cmd.Process.Release()
	return nil
}

// runRequest reads a started run's validated request.
func (h *Host) runRequest(runID string) (contract.RunRequest, error) {
	var req contract.RunRequest
	err := readJSON(h.path("runs", runID, "run.json"), &req)
	if err == nil && req.Loadgen.Builds == nil {
		err = fmt.Errorf("run %s: its request names no builds", runID)
	}
	return req, err
}

// failure ends a run: its error kind (challenger_unhealthy, …) and what happened.
type failure struct{ kind, message string }

func (f *failure) Error() string { return f.kind + ": " + f.message }

func fail(kind, format string, args ...any) error {
	return &failure{kind: kind, message: fmt.Sprintf(format, args...)}
}

// errAborted ends a run that was asked to stop; its finished slices are kept.
var errAborted = errors.New("the run was aborted")

// errOverran is the cause of a run stopped at its deadline.
var errOverran = errors.New("the run overran --max-run-seconds")

// execution is one detached run: its record (progress log, result, outcome) and the result it
// builds up.
type execution struct {
	h        *Host
	runID    string
	rec      *runRecord
	outcome  contract.Outcome
	result   contract.HostResult
	measured bool       // the load generator ran: there is a result to keep
	wipe     []*arm.Arm // arms that filled their disk: everything they wrote goes after the stop
}

// Execute is the detached run: it ends by writing outcome.json, and its exit frees the lock.
func (h *Host) Execute(ctx context.Context, runID string) error {
	keepInheritedLock()
	rec, err := h.openRunRecord(runID)
	if err != nil {
		return err
	}
	e := &execution{h: h, runID: runID, rec: rec,
		outcome: contract.Outcome{RunID: runID, Started: time.Now().UTC(), Status: contract.StatusError}}
	// A run never holds the host past --max-run-seconds (plus a minute to stop), whatever hangs.
	ctx, cancel := context.WithTimeoutCause(ctx, time.Duration(h.MaxRunSeconds*float64(time.Second))+time.Minute, errOverran)
	defer cancel()
	return e.finish(ctx, e.run(ctx))
}

func (e *execution) logf(format string, args ...any) { e.rec.logf(format, args...) }

// run goes through the run's steps; the first to fail ends it.
func (e *execution) run(ctx context.Context) error {
	req, err := e.h.runRequest(e.runID)
	if err != nil {
		return fail("internal", "%v", err)
	}
	e.outcome.Kind = req.Loadgen.Builds.Kind
	lp, err := plan.Compile(req.Loadgen, e.h.runDir(e.runID), e.h.generatorCPUs())
	if err != nil {
		return fail("internal", "%v", err)
	}
	if err := e.h.readDescriptorSets(ctx, lp); err != nil {
		return fail("plan", "%v", err)
	}
	e.logf("%s run %s started", e.outcome.Kind, e.runID)
	if err := e.preflight(ctx, e.outcome.Kind); err != nil {
		return err
	}
	iso, err := e.h.arms()
	if err != nil {
		return fail("internal", "%v", err)
	}
	e.result.Isolation = &iso.info
	e.logf("isolation: %s", iso.summary())
	st, err := e.h.LoadState()
	if err != nil {
		return fail("internal", "%v", err)
	}
	// Both arms run with the run's service spec, the config that asked for the run: the
	// champion's build (or the merge base) as the challenger's. The spec it was promoted with
	// stays the supervisor's, between runs.
	specChanged := false
	if req.Loadgen.Builds.Base != contract.BaseMergeBase {
		if st.Champion != req.Loadgen.Builds.ChampionSHA {
			return fail("internal", "the champion is %s, not %s as when the run was asked for", st.Champion, req.Loadgen.Builds.ChampionSHA)
		}
		if specChanged = contract.Digest(req.Service) != contract.Digest(st.Service); specChanged {
			e.logf("the champion arm runs champion %s with this run's service spec, not the one it was promoted with", st.Champion)
		}
	}
	// The run starts its own champion, as it starts the challenger; the supervisor's champion
	// serves the port again before the run reports, however the run ends.
	defer e.giveBackChampionPort()
	how, err := e.h.takeChampionPort(e.runID, st)
	if err != nil {
		return fail("champion_unhealthy", "the champion supervisor did not hand over :%d: %v", e.h.ChampionPort, err)
	}
	e.logf("the champion port :%d is this run's: %s; both arms start fresh", e.h.ChampionPort, how)
	arms, err := e.startArms(ctx, iso, req)
	if err != nil {
		return err
	}
	// Both arms, and everything they started, are stopped before anything is reported.
	stop := sync.OnceValue(func() error { return e.stopArms(arms) })
	defer stop()
	e.result.Identity = e.identity(iso, lp, arms, specChanged)
	measureErr := e.measure(ctx, iso, lp, arms)
	if err := eachArm((*armStart).ownsPorts)(arms); err != nil && measureErr == nil {
		var ae *armError
		errors.As(err, &ae)
		measureErr = fail(ae.arm+"_unhealthy", "%v", err)
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
	e.result.Preflight = e.h.Preflight(kind)
	for _, f := range e.result.Preflight {
		e.logf("preflight %s: %s: %s", f.Check, f.Status, f.Detail)
	}
	if r := refusals(e.result.Preflight); len(r) > 0 {
		return fail("preflight", "host refused the run: %s", strings.Join(r, "; "))
	}
	quiet := e.h.settle(ctx, e.logf)
	e.logf("preflight %s: %s: %s", quiet.Check, quiet.Status, quiet.Detail)
	e.result.Preflight = append(e.result.Preflight, quiet)
	return nil
}

// startArms starts the champion arm and the challenger together with the run's service spec,
// each a new process in a fresh copy of its build with ports of its own; a failure is the
// failing arm's, with its log tail.
func (e *execution) startArms(ctx context.Context, iso *isolation, req contract.RunRequest) ([]*armStart, error) {
	b := req.Loadgen.Builds
	ports, err := service.AllocatePorts(e.h.portRange(), [][]string{contract.ServicePortNames(req.Service), contract.ServicePortNames(req.Service)}, e.h.mainPorts())
	if err != nil {
		return nil, fail("preflight", "host refused the run: %v", err)
	}
	arms := []*armStart{
		newArmStart(iso.champion, contract.Champion, b.ChampionSHA, req.Service, ports[0], e.h.armLog("runs", e.runID, "champion.log"), e.logf),
		newArmStart(iso.challenger, contract.Challenger, b.ChallengerSHA, req.Service, ports[1], e.h.armLog("runs", e.runID, "challenger.log"), e.logf),
	}
	if err := startTogether(ctx, e.h, arms); err != nil {
		if stopped := e.stoppedBy(ctx); stopped != nil {
			return nil, stopped
		}
		var ae *armError
		errors.As(err, &ae)
		return nil, fail(ae.arm+"_unhealthy", "%v", err)
	}
	return arms, nil
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

// stoppedBy is why the run was stopped from outside (its deadline, or abort), if it was.
func (e *execution) stoppedBy(ctx context.Context) error {
	switch {
	case errors.Is(context.Cause(ctx), errOverran):
		return fail("overran", "the run went past --max-run-seconds %g and was stopped", e.h.MaxRunSeconds)
	case ctx.Err() != nil:
		return errAborted
	}
	return nil
}

// loadOptions are the load generator's: slice accounting always, and the CPUs held awake when
// the host asks for it.
func (e *execution) loadOptions(acc *sliceAccounting) []loadgen.Option {
	opts := []loadgen.Option{loadgen.WithSliceObserver(acc)}
	if e.h.HoldCPUsAwake {
		opts = append(opts, loadgen.WithCPUsHeldAwake(openDevice))
	}
	return opts
}

// stopArms stops both arms and records how each started and what it left on disk.
func (e *execution) stopArms(arms []*armStart) error {
	start := time.Now()
	if err := eachArm((*armStart).stop)(arms); err != nil {
		var ae *armError
		errors.As(err, &ae)
		return fail(ae.arm+"_not_stopped", "the %s's processes could not all be stopped: %v", ae.arm, err)
	}
	e.logf("both arms stopped in %.2f s: nothing of either runs", time.Since(start).Seconds())
	e.result.Arms = map[string]contract.ArmStart{}
	for _, s := range arms {
		s.measureDisk()
		s.recordLog()
		e.result.Arms[s.arm.Name] = s.record
	}
	for _, a := range e.wipe {
		if err := a.Wipe(); err != nil {
			return fail(a.Name+"_not_stopped", "%v", err)
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
	if err := e.h.returnChampionPort(ctx); err != nil {
		e.logf("the champion is not serving on :%d again: %v", e.h.ChampionPort, err)
		return
	}
	e.logf("the champion serves on :%d again (its supervisor's)", e.h.ChampionPort)
}

// armCrash is an arm's service exiting while the load runs.
type armCrash struct{ arm *armStart }

func (c *armCrash) Error() string { return c.arm.name + " crashed" }

// armFailed is an arm failing while the load runs without exiting: out of its disk.
type armFailed struct {
	arm           *armStart
	kind, message string
}

func (f *armFailed) Error() string { return f.message }

// measure runs the load generator, cut short if either arm's service exits or the run is
// aborted, and samples both arms at every slice boundary for the slices' resource fields.
func (e *execution) measure(ctx context.Context, iso *isolation, lp *plan.Plan, arms []*armStart) error {
	loadCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, s := range arms {
		go func() {
			select {
			case <-s.proc.Exited():
				cancel(&armCrash{s})
			case <-loadCtx.Done():
			}
		}()
	}
	byName := map[string]*armStart{}
	for _, s := range arms {
		byName[s.arm.Name] = s
	}
	failArm := func(name, kind, message string) { cancel(&armFailed{byName[name], kind, message}) }
	oomBefore := oomKills()
	acc := e.h.newSliceAccounting(iso, failArm)
	res, err := loadgen.Run(loadCtx, lp, lineWriter{e.logf}, e.loadOptions(acc)...)
	if loadCtx.Err() == nil && err == nil {
		acc.AfterLoad(len(res.Slices)) // the OOM killer may have struck after the last boundary
	}
	cause := context.Cause(loadCtx)
	cancel(nil) // the load is over: an arm's exit from here on is its stop, not a crash
	if err != nil {
		return fail("loadgen", "%v", err)
	}
	e.result.Result, e.measured = *res, true
	e.result.ResourceAccounting = map[string]contract.ResourceAccounting{
		contract.Champion: iso.champion.Accounting(), contract.Challenger: iso.challenger.Accounting()}
	for _, a := range []*arm.Arm{iso.champion, iso.challenger} {
		if note := iso.refusedNote(a); note != "" {
			e.logf("%s", note)
		}
	}
	if crash := (*armCrash)(nil); errors.As(cause, &crash) {
		s := crash.arm
		s.proc.Logged(time.Second)
		if why, ok := killedForMemory(s.arm, oomKills() > oomBefore && strings.Contains(s.proc.ExitError(), "killed")); ok {
			return fail(s.arm.Name+"_out_of_memory", "%s (%s %s); its log ends:\n%s", why, s.name, s.sha, service.LogTail(s.log.Path, 20))
		}
		return fail(s.arm.Name+"_crashed", "%s %s %s during the run; its log ends:\n%s", s.name, s.sha, s.proc.ExitError(), service.LogTail(s.log.Path, 20))
	}
	if failed := (*armFailed)(nil); errors.As(cause, &failed) {
		s := failed.arm
		if failed.kind == "out_of_disk" {
			e.wipe = append(e.wipe, s.arm)
			return fail(s.arm.Name+"_"+failed.kind, "%s (%s %s); the run's measurements up to then are kept, and everything it wrote is removed", failed.message, s.name, s.sha)
		}
		return fail(s.arm.Name+"_"+failed.kind, "%s (%s %s); the run's measurements up to then are kept", failed.message, s.name, s.sha)
	}
	return e.stoppedBy(ctx)
}

// finish writes the result (if any load was sent) and the outcome, and ends the progress log
// with the outcome marker line that `wait` returns on; a write that fails fails the run.
func (e *execution) finish(ctx context.Context, err error) error {
	var f *failure
	switch {
	case err == nil:
		e.outcome.Status = contract.StatusOK
	case errors.Is(err, errAborted):
		e.outcome.Status, e.outcome.ErrorKind, e.outcome.Message = contract.StatusAborted, "aborted", err.Error()
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

// lineWriter turns the load generator's progress lines into timestamped log lines.
type lineWriter struct{ logf func(string, ...any) }

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.logf("%s", line)
	}
	return len(p), nil
}

// Wait streams a run's progress from its start and returns its outcome. It only reads files,
// so calling it again after a dropped connection is safe and loses nothing.
func (h *Host) Wait(ctx context.Context, runID string, w io.Writer) (contract.Outcome, error) {
	var out contract.Outcome
	f, err := os.Open(h.path("runs", runID, "progress.log"))
	for i := 0; os.IsNotExist(err) && i < 50; i++ {
		if _, serr := os.Stat(h.runDir(runID)); serr != nil {
			return out, fmt.Errorf("no run %s", runID)
		}
		time.Sleep(100 * time.Millisecond) // the executor is starting
		f, err = os.Open(h.path("runs", runID, "progress.log"))
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var partial string
	for {
		line, err := r.ReadString('\n')
		partial += line
		if err == nil {
			if rest, ok := strings.CutPrefix(partial, contract.OutcomeMarker); ok {
				fmt.Fprint(w, partial)
				return out, json.Unmarshal([]byte(rest), &out)
			}
			if _, err := fmt.Fprint(w, partial); err != nil {
				return out, err
			}
			partial = ""
			continue
		}
		if !h.executorAlive(runID) {
			// Give a just-finished executor's last write a moment, then report the death.
			time.Sleep(200 * time.Millisecond)
			if _, serr := os.Stat(h.path("runs", runID, "outcome.json")); serr != nil {
				out = h.executorDied(runID)
				writeJSONAtomic(h.path("runs", runID, "outcome.json"), out)
				line, _ := json.Marshal(out)
				fmt.Fprintf(w, "%s%s\n", contract.OutcomeMarker, line)
				return out, nil
			}
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// executorDied is the outcome of a run whose process died without writing one.
func (h *Host) executorDied(runID string) contract.Outcome {
	out := contract.Outcome{RunID: runID, Status: contract.StatusError, ErrorKind: "executor_died", Message: "the run's process died without an outcome", Ended: time.Now().UTC()}
	if req, err := h.runRequest(runID); err == nil {
		out.Kind = req.Loadgen.Builds.Kind
	}
	return out
}

func (h *Host) executorAlive(runID string) bool {
	b, err := os.ReadFile(h.path("runs", runID, "pid"))
	if err != nil {
		return true // not written yet: the run is starting
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return alive(pid, "execute")
}

// ErrNotFinished is returned by Result while the run is going.
var ErrNotFinished = errors.New("not finished")

// Result returns the run's result document.
func (h *Host) Result(runID string) ([]byte, error) {
	if _, err := os.Stat(h.runDir(runID)); err != nil {
		return nil, fmt.Errorf("no run %s", runID)
	}
	var out contract.Outcome
	if err := readJSON(h.path("runs", runID, "outcome.json"), &out); err != nil {
		if h.executorAlive(runID) {
			return nil, fmt.Errorf("run %s: %w", runID, ErrNotFinished)
		}
		out = h.executorDied(runID)
	}
	b, err := os.ReadFile(h.path("runs", runID, "result.json"))
	if os.IsNotExist(err) {
		// The run failed before any load: the outcome is the whole result.
		return json.MarshalIndent(map[string]any{"outcome": out}, "", "  ")
	}
	return b, err
}

// Abort stops a running experiment; its finished slices are kept, marked partial.
func (h *Host) Abort(runID string) error {
	if _, err := os.Stat(h.path("runs", runID, "outcome.json")); err == nil {
		return fmt.Errorf("run %s has already finished", runID)
	}
	b, err := os.ReadFile(h.path("runs", runID, "pid"))
	if err != nil {
		return fmt.Errorf("no run %s", runID)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if !alive(pid, "execute") {
		return fmt.Errorf("run %s is not running", runID)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 300 && alive(pid, "execute"); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// launchDetached starts perf-host VERB ARGS in a session of its own, in the group place picks
// (the executor with the load generator, the supervisor in its own), logging to logPath, so it
// outlives the SSH connection that asked for it. The two detached processes start here alike.
func (h *Host) launchDetached(logPath string, place func(*isolation) *arm.Arm, extra []*os.File, verb string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(h.Exe, append(append([]string{verb}, h.Flags()...), args...)...)
	cmd.Dir = h.Root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	iso, err := h.arms()
	if err != nil {
		return nil, err
	}
	return cmd, place(iso).Launch(cmd)
}
