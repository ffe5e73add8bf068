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
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/loadgen"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/result"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Kinds of run.
const (
	KindAB = "ab" // champion vs challenger
	KindAA = "aa" // the champion build on both ports: the noise floor
)

// maxPlanBytes bounds a plan read from stdin.
const maxPlanBytes = 1 << 20

// RunPlan is what `run` and `aa` read on stdin: the load generator's plan without targets
// (the host sets them to its ports) plus how to start the service.
type RunPlan struct {
	ChallengerSHA string          `json:"challenger_sha,omitempty"`
	ChampionSHA   string          `json:"champion_sha,omitempty"` // optional: refuse if the host's champion differs
	Service       service.Spec    `json:"service"`
	Loadgen       json.RawMessage `json:"loadgen"`
}

// Outcome is how a run ended.
type Outcome struct {
	RunID   string    `json:"run_id"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"` // ok, error, aborted
	Error   string    `json:"error_kind,omitempty"`
	Message string    `json:"message,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// HostResult is the load generator's result plus the run's outcome and pre-flight findings.
type HostResult struct {
	*result.Result
	Outcome   Outcome   `json:"outcome"`
	Preflight []Finding `json:"preflight"`
	Champion  string    `json:"champion_sha"`
}

// OutcomeMarker starts the last line `wait` prints: the outcome as JSON.
const OutcomeMarker = "perf-gate-outcome "

// StartRun validates the plan, takes the host lock, and starts the experiment in a detached
// process that holds the lock until it ends, so the run survives the SSH connection.
func (h *Host) StartRun(runID, kind string, stdin io.Reader) (err error) {
	if _, err := os.Stat(h.runDir(runID)); err == nil {
		return refuse("run %s already exists; use a new run-id", runID)
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxPlanBytes+1))
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	if len(raw) > maxPlanBytes {
		return refuse("plan: larger than %d bytes", maxPlanBytes)
	}
	rp, lp, err := h.parseRunPlan(raw, runID, kind)
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
	hp := struct {
		Kind string `json:"kind"`
		RunPlan
	}{kind, *rp}
	if err := writeJSONAtomic(h.path("runs", runID, "plan.json"), hp); err != nil {
		return err
	}
	lpFile, err := os.Create(h.path("runs", runID, "loadgen-plan.json"))
	if err != nil {
		return err
	}
	err = lp.Encode(lpFile)
	if cerr := lpFile.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(h.path("runs", runID, "executor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(h.Exe, append(append([]string{"execute"}, h.Flags()...), runID)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{lock.File()} // the executor holds the lock from here on
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the run: %w", err)
	}
	lock.HandOver(kind+" "+runID, cmd.Process.Pid)
	lock.Detach()
	os.WriteFile(h.path("runs", runID, "pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
	cmd.Process.Release()
	return nil
}

func (h *Host) parseRunPlan(raw []byte, runID, kind string) (*RunPlan, *plan.Plan, error) {
	var rp RunPlan
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rp); err != nil {
		return nil, nil, refuse("plan: %v", err)
	}
	if err := rp.Service.Validate(); err != nil {
		return nil, nil, refuse("plan: %w", err)
	}
	st, err := h.LoadState()
	if err != nil {
		return nil, nil, err
	}
	if st.Champion == "" {
		return nil, nil, errors.New("no champion on this host: deploy champion SHA and promote SHA first")
	}
	if rp.ChampionSHA != "" && rp.ChampionSHA != st.Champion {
		return nil, nil, refuse("plan: champion_sha %s, but the host's champion is %s", rp.ChampionSHA, st.Champion)
	}
	switch kind {
	case KindAB:
		if rp.ChallengerSHA == "" {
			return nil, nil, refuse("plan: challenger_sha: required for run")
		}
		if _, err := os.Stat(h.releaseDir(rp.ChallengerSHA)); err != nil || strings.ContainsAny(rp.ChallengerSHA, "/.") {
			return nil, nil, refuse("plan: challenger_sha: release %q is not deployed (deploy challenger SHA first)", rp.ChallengerSHA)
		}
	case KindAA:
		if rp.ChallengerSHA != "" {
			return nil, nil, refuse("plan: challenger_sha: an A/A run uses the champion on both ports; leave it out")
		}
	}
	// The host owns the targets and names the builds; the rest is the load generator's plan.
	var lgFields map[string]json.RawMessage
	if err := json.Unmarshal(rp.Loadgen, &lgFields); err != nil {
		return nil, nil, refuse("plan: loadgen: must be the load generator's plan object: %v", err)
	}
	if _, ok := lgFields["targets"]; ok {
		return nil, nil, refuse("plan: loadgen.targets: set by the host, leave it out")
	}
	challengerSHA := rp.ChallengerSHA
	if kind == KindAA {
		challengerSHA = st.Champion
	}
	set := func(k string, v any) { b, _ := json.Marshal(v); lgFields[k] = b }
	set("targets", plan.Targets{
		Champion:   fmt.Sprintf("http://127.0.0.1:%d", h.ChampionPort),
		Challenger: fmt.Sprintf("http://127.0.0.1:%d", h.ChallengerPort),
	})
	set("run_id", runID)
	meta := map[string]string{}
	if m, ok := lgFields["meta"]; ok {
		json.Unmarshal(m, &meta)
	}
	meta["kind"], meta["champion_sha"], meta["challenger_sha"] = kind, st.Champion, challengerSHA
	set("meta", meta)
	lgRaw, _ := json.Marshal(lgFields)
	lp, err := plan.Parse(bytes.NewReader(lgRaw), h.runDir(runID))
	if err != nil {
		return nil, nil, refuse("plan: loadgen.%s", strings.TrimPrefix(err.Error(), "plan: "))
	}
	return &rp, lp, nil
}

// Execute is the detached run: it ends by writing outcome.json, and its exit frees the lock.
func (h *Host) Execute(ctx context.Context, runID string) error {
	progress, err := os.OpenFile(h.path("runs", runID, "progress.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer progress.Close()
	logf := func(format string, args ...any) {
		fmt.Fprintf(progress, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	var hp struct {
		Kind string `json:"kind"`
		RunPlan
	}
	out := Outcome{RunID: runID, Started: time.Now().UTC(), Status: "error"}
	hr := HostResult{}
	finish := func() error {
		out.Ended = time.Now().UTC()
		hr.Outcome = out
		if hr.Result != nil {
			writeJSONAtomic(h.path("runs", runID, "result.json"), hr)
		}
		writeJSONAtomic(h.path("runs", runID, "outcome.json"), out)
		line, _ := json.Marshal(out)
		fmt.Fprintf(progress, "%s%s\n", OutcomeMarker, line)
		return nil
	}
	fail := func(kind, format string, args ...any) error {
		out.Status, out.Error, out.Message = "error", kind, fmt.Sprintf(format, args...)
		logf("error: %s: %s", kind, strings.SplitN(out.Message, "\n", 2)[0])
		return finish()
	}
	if err := readJSON(h.path("runs", runID, "plan.json"), &hp); err != nil {
		return fail("internal", "%v", err)
	}
	out.Kind = hp.Kind
	lp, err := plan.Load(h.path("runs", runID, "loadgen-plan.json"))
	if err != nil {
		return fail("internal", "%v", err)
	}
	logf("%s run %s started", hp.Kind, runID)
	hr.Preflight = h.Preflight()
	for _, f := range hr.Preflight {
		logf("preflight %s: %s: %s", f.Check, f.Status, f.Detail)
	}
	if r := refusals(hr.Preflight); len(r) > 0 {
		return fail("preflight", "host refused the run: %s", strings.Join(r, "; "))
	}
	st, err := h.LoadState()
	if err != nil {
		return fail("internal", "%v", err)
	}
	hr.Champion = st.Champion
	if err := h.EnsureChampion(ctx); err != nil {
		return fail("champion_unhealthy", "%v", err)
	}
	logf("champion %s healthy on :%d", st.Champion, h.ChampionPort)

	sha, spec := hp.ChallengerSHA, hp.Service
	if hp.Kind == KindAA {
		sha, spec = st.Champion, st.Service
	}
	logPath := h.path("runs", runID, "challenger.log")
	chall, err := service.Start("challenger", spec, h.releaseDir(sha), h.ChallengerPort, logPath, h.ServiceUser)
	if err != nil {
		return fail("challenger_unhealthy", "%v", err)
	}
	defer func() {
		if err := chall.Stop(10 * time.Second); err != nil {
			logf("error: %v", err)
		}
	}()
	if err := chall.WaitHealthy(ctx, spec.HealthPath, time.Duration(spec.HealthTimeoutSeconds*float64(time.Second))); err != nil {
		chall.Stop(10 * time.Second)
		return fail("challenger_unhealthy", "challenger %s %v; its log ends:\n%s", sha, err, service.LogTail(logPath, 20))
	}
	logf("challenger %s healthy on :%d", sha, h.ChallengerPort)

	errCrashed := errors.New("challenger crashed")
	loadCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-chall.Exited():
			cancel(errCrashed)
		case <-loadCtx.Done():
		}
	}()
	res, err := loadgen.Run(loadCtx, lp, lineWriter{logf})
	if err != nil {
		return fail("loadgen", "%v", err)
	}
	hr.Result = res
	switch {
	case errors.Is(context.Cause(loadCtx), errCrashed):
		return fail("challenger_crashed", "challenger %s %s during the run; its log ends:\n%s", sha, chall.ExitError(), service.LogTail(logPath, 20))
	case ctx.Err() != nil:
		out.Status, out.Error, out.Message = "aborted", "aborted", "the run was aborted"
		logf("aborted")
		return finish()
	}
	if hp.Kind == KindAA {
		h.recordCalibration()
	}
	out.Status = "ok"
	logf("done: %d slices", len(res.Slices))
	return finish()
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
func (h *Host) Wait(ctx context.Context, runID string, w io.Writer) (Outcome, error) {
	var out Outcome
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
			if rest, ok := strings.CutPrefix(partial, OutcomeMarker); ok {
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
				out = Outcome{RunID: runID, Status: "error", Error: "executor_died", Message: "the run's process died without an outcome", Ended: time.Now().UTC()}
				writeJSONAtomic(h.path("runs", runID, "outcome.json"), out)
				line, _ := json.Marshal(out)
				fmt.Fprintf(w, "%s%s\n", OutcomeMarker, line)
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
	var out Outcome
	if err := readJSON(h.path("runs", runID, "outcome.json"), &out); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, ErrNotFinished)
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
