package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
)

// runRecord writes a run's files: the progress log as the run goes, then its result and
// outcome. No write fails silently (docs/design/0017-host-faults.md: on a full disk `wait` said
// "ok", result.json was never written, and `result` said "not finished" forever): the first failed
// write fails the run with its cause, and the space for the outcome is reserved when the run
// starts, so that the failure itself can always be recorded.
type runRecord struct {
	store    *store.Store
	runID    string
	progress *os.File
	writeErr error // the first write that failed
}

// reserveBytes is the space set aside for the outcome and the last progress line.
const reserveBytes = 256 << 10

func openRecord(st *store.Store, runID string) (*runRecord, error) {
	progress, err := os.OpenFile(st.Path("runs", runID, "progress.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	r := &runRecord{store: st, runID: runID, progress: progress}
	if err := r.reserve(); err != nil {
		r.failedWrite("the space reserved for the outcome", err)
	}
	return r, nil
}

func (r *runRecord) reservePath() string { return r.store.Path("runs", r.runID, ".reserve") }

func (r *runRecord) reserve() error {
	f, err := os.OpenFile(r.reservePath(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, reserveBytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *runRecord) failedWrite(what string, err error) {
	if r.writeErr == nil {
		r.writeErr = fmt.Errorf("writing %s: %w", what, err)
	}
}

// logf appends a timestamped line to the progress log.
func (r *runRecord) logf(format string, args ...any) {
	if _, err := fmt.Fprintf(r.progress, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...)); err != nil {
		r.failedWrite("progress.log", err)
	}
}

// finish writes the result (when there is one) and the outcome, and ends the progress log with
// the outcome line `wait` looks for. A failed write turns the outcome into an error naming it.
func (r *runRecord) finish(out contract.Outcome, hr *contract.HostResult) error {
	defer r.progress.Close()
	out.Ended = time.Now().UTC()
	if r.writeErr != nil {
		out = writeFailure(out, r.writeErr)
	}
	if hr != nil {
		hr.Outcome = out
		if err := store.WriteJSONAtomic(r.store.Path("runs", r.runID, "result.json"), hr); err != nil {
			out = writeFailure(out, fmt.Errorf("writing result.json: %w", err))
		}
	}
	os.Remove(r.reservePath())
	if out.Status == contract.StatusError {
		fmt.Fprintf(r.progress, "%s error: %s: %s\n", time.Now().UTC().Format("15:04:05"), out.ErrorKind, strings.SplitN(out.Message, "\n", 2)[0])
	}
	oerr := store.WriteJSONAtomic(r.store.Path("runs", r.runID, "outcome.json"), out)
	line, _ := json.Marshal(out)
	_, perr := fmt.Fprintf(r.progress, "%s%s\n", contract.OutcomeMarker, line)
	return errors.Join(oerr, perr)
}

// writeFailure is out failed by a write: the measurements are lost, whatever the run's fate.
func writeFailure(out contract.Outcome, err error) contract.Outcome {
	msg := err.Error() + "; the run's measurements are not stored"
	if out.Status == contract.StatusError && out.Message != "" {
		msg += " (the run had also failed: " + string(out.ErrorKind) + ": " + out.Message + ")"
	}
	out.Status, out.ErrorKind, out.Message = contract.StatusError, contract.ErrorWriteFailed, msg
	return out
}
