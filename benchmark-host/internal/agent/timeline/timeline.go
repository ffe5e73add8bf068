// Package timeline is the host's part in main's history (docs/design/0023-history.md): the
// records a client sends (gate-record, drift-record) checked against the run they come with,
// the promotions, rollbacks and calibrations the host records itself, the champions it keeps
// for drift runs, and the history as `history` prints it.
package timeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/history"
)

// Timeline is the history of one host.
type Timeline struct {
	store   *store.Store
	history *history.Store
}

// New is the history kept in the host's root, within bound bytes, on the clock the
// environment gives (history.ClockEnv: tests move it; a host in service leaves it unset).
func New(st *store.Store, bound int64) (*Timeline, error) {
	clock, err := history.ClockFrom(os.Getenv(history.ClockEnv))
	if err != nil {
		return nil, err
	}
	h, err := history.Open(st.Root, bound, clock)
	if err != nil {
		return nil, err
	}
	return &Timeline{store: st, history: h}, nil
}

// Now is the history's clock: promotions date the champions' reigns by it.
func (t *Timeline) Now() time.Time { return t.history.Now() }

// RecordGate keeps the gate record on r, sent with one of the gate's runs.
func (t *Timeline) RecordGate(runID string, r io.Reader) (string, error) {
	run, err := t.run(runID, "gate")
	if err != nil {
		return "", err
	}
	e, err := t.history.RecordGate(run, r)
	if err != nil {
		return "", refusedIf(err)
	}
	return fmt.Sprintf("gate of %s recorded from %s (%s)", e.Gate.ChallengerSHA, runID, e.Gate.Verdict), nil
}

// RecordDrift keeps the drift record on r, sent with the drift run.
func (t *Timeline) RecordDrift(runID string, r io.Reader) (string, error) {
	run, err := t.run(runID, "drift")
	if err != nil {
		return "", err
	}
	e, err := t.history.RecordDrift(run, r)
	if err != nil {
		return "", refusedIf(err)
	}
	return fmt.Sprintf("drift of %s against %s recorded from %s", e.Drift.ChampionSHA, e.Drift.AncestorSHA, runID), nil
}

// Promoted records a new champion with the step it took (pull request pr's last gate, else the
// build's own) and says which step that was.
func (t *Timeline) Promoted(sha, previous string, pr int) (string, error) {
	e, err := t.history.RecordChange(contract.HistoryPromotion, sha, previous, pr)
	if err != nil {
		return "", err
	}
	if e.Change.Step == nil {
		return "no gate of it on this host: its step counts 0", nil
	}
	g := e.Change.Step.Gate
	return fmt.Sprintf("its step is the gate of %s recorded %s (%s)", g.ChallengerSHA, e.Change.Step.Gated.Format(time.RFC3339), g.Verdict), nil
}

// RolledBack records a rollback to sha from previous.
func (t *Timeline) RolledBack(sha, previous string) error {
	_, err := t.history.RecordChange(contract.HistoryRollback, sha, previous, 0)
	return err
}

// Calibrated records an A/A floor.
func (t *Timeline) Calibrated(runID string, f contract.FloorRecord) error {
	_, err := t.history.RecordCalibration(runID, f)
	return err
}

// Succession is the ancestors after sha becomes the champion now.
func (t *Timeline) Succession(st store.State, sha string) []contract.Ancestor {
	return history.Succession(st.Ancestors, sha, t.Now())
}

// Document is the history as `history` prints it.
func (t *Timeline) Document() (contract.History, error) {
	st, err := t.store.LoadState()
	if err != nil {
		return contract.History{}, err
	}
	return t.history.Document(st.Champion, st.Ancestors)
}

// run is what the host knows of a finished run, for the record sent with it.
func (t *Timeline) run(runID, what string) (history.Run, error) {
	req, err := t.store.RunRequest(runID)
	if err != nil {
		return history.Run{}, refused.Errorf("%s: run %s: no run of that id on this host", what, runID)
	}
	oc, err := t.store.RunOutcome(runID)
	if err != nil {
		return history.Run{}, refused.Errorf("%s: run %s has not finished", what, runID)
	}
	b := req.Loadgen.Builds
	return history.Run{
		ID: runID, Kind: b.Kind, Status: oc.Status, Base: b.Base, ChampionSHA: b.ChampionSHA, ChallengerSHA: b.ChallengerSHA,
		Workload: req.Loadgen.Workload, Rate: req.Loadgen.Rate,
	}, nil
}

// refusedIf makes the history's refusal the host's (exit 2); other failures stay failures.
func refusedIf(err error) error {
	var r *history.Refusal
	if errors.As(err, &r) {
		return &refused.Error{Err: err}
	}
	return err
}
