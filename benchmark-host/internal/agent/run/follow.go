package run

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/profile"
)

// Wait streams a run's progress from its start and returns its outcome. It only reads files,
// so calling it again after a dropped connection is safe and loses nothing.
func (r *Runs) Wait(ctx context.Context, runID string, w io.Writer) (contract.Outcome, error) {
	var out contract.Outcome
	f, err := os.Open(r.store.Path("runs", runID, "progress.log"))
	for i := 0; os.IsNotExist(err) && i < 50; i++ {
		if _, serr := os.Stat(r.store.RunDir(runID)); serr != nil {
			return out, fmt.Errorf("no run %s", runID)
		}
		time.Sleep(100 * time.Millisecond) // the executor is starting
		f, err = os.Open(r.store.Path("runs", runID, "progress.log"))
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	progress := bufio.NewReader(f)
	var partial string
	for {
		line, err := progress.ReadString('\n')
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
		if !r.executorAlive(runID) {
			// Give a just-finished executor's last write a moment, then report the death.
			time.Sleep(200 * time.Millisecond)
			if _, serr := os.Stat(r.store.Path("runs", runID, "outcome.json")); serr != nil {
				out = r.executorDied(runID)
				store.WriteJSONAtomic(r.store.Path("runs", runID, "outcome.json"), out)
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
func (r *Runs) executorDied(runID string) contract.Outcome {
	out := contract.Outcome{RunID: runID, Status: contract.StatusError, ErrorKind: contract.ErrorExecutorDied, Message: "the run's process died without an outcome", Ended: time.Now().UTC()}
	if req, err := r.store.RunRequest(runID); err == nil {
		out.Kind = req.Loadgen.Builds.Kind
	}
	return out
}

func (r *Runs) executorAlive(runID string) bool {
	b, err := os.ReadFile(r.store.Path("runs", runID, "pid"))
	if err != nil {
		return true // not written yet: the run is starting
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return detached.Alive(pid, "execute")
}

// ErrNotFinished is returned by Result while the run is going.
var ErrNotFinished = errors.New("not finished")

// Profile is an arm's CPU profile of a finished run that asked for profiles (gzipped pprof):
// `perf-host profile RUN-ID ARM`.
func (r *Runs) Profile(runID, arm string) ([]byte, error) {
	if _, err := os.Stat(r.store.RunDir(runID)); err != nil {
		return nil, fmt.Errorf("no run %s", runID)
	}
	return profile.Read(r.store.RunDir(runID), arm)
}

// Result returns the run's result document.
func (r *Runs) Result(runID string) ([]byte, error) {
	if _, err := os.Stat(r.store.RunDir(runID)); err != nil {
		return nil, fmt.Errorf("no run %s", runID)
	}
	var out contract.Outcome
	if err := store.ReadJSON(r.store.Path("runs", runID, "outcome.json"), &out); err != nil {
		if r.executorAlive(runID) {
			return nil, fmt.Errorf("run %s: %w", runID, ErrNotFinished)
		}
		out = r.executorDied(runID)
	}
	b, err := os.ReadFile(r.store.Path("runs", runID, "result.json"))
	if os.IsNotExist(err) {
		// The run failed before any load: the outcome is the whole result.
		return json.MarshalIndent(map[string]any{"outcome": out}, "", "  ")
	}
	return b, err
}

// Abort stops a running experiment; its finished slices are kept, marked partial.
func (r *Runs) Abort(runID string) error {
	if _, err := os.Stat(r.store.Path("runs", runID, "outcome.json")); err == nil {
		return fmt.Errorf("run %s has already finished", runID)
	}
	b, err := os.ReadFile(r.store.Path("runs", runID, "pid"))
	if err != nil {
		return fmt.Errorf("no run %s", runID)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if !detached.Alive(pid, "execute") {
		return fmt.Errorf("run %s is not running", runID)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 300 && detached.Alive(pid, "execute"); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
