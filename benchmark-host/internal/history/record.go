package history

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Refusal is a record the history will not keep as sent (a bad record, a run that does not
// back it): the client must change it, not retry it.
type Refusal struct{ Err error }

func (e *Refusal) Error() string { return e.Err.Error() }
func (e *Refusal) Unwrap() error { return e.Err }

func refuse(format string, args ...any) error { return &Refusal{Err: fmt.Errorf(format, args...)} }

// Run is what the host knows of a finished run: what a record sent with it must agree with.
type Run struct {
	ID                         string
	Kind, Status, Base         string
	ChampionSHA, ChallengerSHA string
	Workload                   string
	Rate                       float64
}

// maxRecordBytes bounds a record on stdin: a gate of 256 comparisons and 1,024 pooled runs fits.
const maxRecordBytes = MaxEntryBytes - 4<<10

// RecordGate keeps a finished gate's record, read strictly from r. The run it is sent with must
// be a finished A/B run of the record's builds, of a workload and rate it names, among its runs,
// and not the anchor of a gate recorded before.
func (s *Store) RecordGate(run Run, r io.Reader) (contract.HistoryEntry, error) {
	var g contract.GateRecord
	if err := decodeRecord(r, &g, "gate"); err != nil {
		return contract.HistoryEntry{}, err
	}
	if err := ValidateGate(&g); err != nil {
		return contract.HistoryEntry{}, refuse("gate: %v", err)
	}
	base := cmp.Or(run.Base, contract.BaseChampion)
	switch {
	case run.Kind != contract.KindAB || run.Status != contract.StatusOK:
		return contract.HistoryEntry{}, refuse("gate: run %s: a gate is recorded from an A/B run that ended ok; this one is kind %q, status %q", run.ID, run.Kind, run.Status)
	case run.ChallengerSHA != g.ChallengerSHA || run.ChampionSHA != g.ChampionSHA || base != g.Base:
		return contract.HistoryEntry{}, refuse("gate: run %s measured %s against %s %s, not %s against %s %s", run.ID, run.ChallengerSHA, base, run.ChampionSHA, g.ChallengerSHA, g.Base, g.ChampionSHA)
	case !slices.ContainsFunc(g.Comparisons, func(c contract.ComparisonRecord) bool {
		return contract.Key(c.Workload, c.Rate) == contract.Key(run.Workload, run.Rate)
	}):
		return contract.HistoryEntry{}, refuse("gate: run %s measured %s, which the record does not compare", run.ID, contract.Key(run.Workload, run.Rate))
	case !slices.Contains(g.Runs, run.ID):
		return contract.HistoryEntry{}, refuse("gate: run %s is not among the record's runs", run.ID)
	}
	if err := s.notRecorded(contract.HistoryGate, run.ID); err != nil {
		return contract.HistoryEntry{}, err
	}
	return s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, RunID: run.ID, Gate: &g})
}

// RecordDrift keeps a drift run's interval, read strictly from r. The run must be a finished A/B
// run of the champion (challenger arm) against the ancestor (champion arm), of the record's
// workload and rate, not recorded before.
func (s *Store) RecordDrift(run Run, r io.Reader) (contract.HistoryEntry, error) {
	var d contract.DriftRecord
	if err := decodeRecord(r, &d, "drift"); err != nil {
		return contract.HistoryEntry{}, err
	}
	if err := ValidateDrift(&d); err != nil {
		return contract.HistoryEntry{}, refuse("drift: %v", err)
	}
	switch {
	case run.Kind != contract.KindAB || run.Status != contract.StatusOK || run.Base != contract.BaseAncestor:
		return contract.HistoryEntry{}, refuse("drift: run %s: a drift is recorded from an A/B run against an ancestor that ended ok; this one is kind %q, base %q, status %q", run.ID, run.Kind, run.Base, run.Status)
	case run.ChallengerSHA != d.ChampionSHA || run.ChampionSHA != d.AncestorSHA:
		return contract.HistoryEntry{}, refuse("drift: run %s measured %s against %s, not champion %s against ancestor %s", run.ID, run.ChallengerSHA, run.ChampionSHA, d.ChampionSHA, d.AncestorSHA)
	case contract.Key(run.Workload, run.Rate) != contract.Key(d.Workload, d.Rate):
		return contract.HistoryEntry{}, refuse("drift: run %s measured %s, not %s", run.ID, contract.Key(run.Workload, run.Rate), contract.Key(d.Workload, d.Rate))
	}
	if err := s.notRecorded(contract.HistoryDrift, run.ID); err != nil {
		return contract.HistoryEntry{}, err
	}
	return s.Append(contract.HistoryEntry{Kind: contract.HistoryDrift, RunID: run.ID, Drift: &d})
}

// RecordChange keeps a promotion (with the step: the last gate of pull request pr, else of the
// build) or a rollback.
func (s *Store) RecordChange(kind, sha, previous string, pr int) (contract.HistoryEntry, error) {
	c := contract.ChampionChange{SHA: sha, Previous: previous, PullRequest: pr}
	if kind == contract.HistoryPromotion {
		entries, _, err := s.Read()
		if err != nil {
			return contract.HistoryEntry{}, err
		}
		if step, ok := LastGate(entries, pr, sha); ok {
			c.Step = &step
		}
	}
	return s.Append(contract.HistoryEntry{Kind: kind, Change: &c})
}

// RecordCalibration keeps an A/A floor as recorded.
func (s *Store) RecordCalibration(runID string, f contract.FloorRecord) (contract.HistoryEntry, error) {
	return s.Append(contract.HistoryEntry{Kind: contract.HistoryCalibration, RunID: runID, Calibration: &f})
}

// Document is the history as `perf-host history` prints it.
func (s *Store) Document(champion string, ancestors []contract.Ancestor) (contract.History, error) {
	entries, dropped, err := s.Read()
	if err != nil {
		return contract.History{}, err
	}
	newestFirst := slices.Clone(ancestors)
	slices.Reverse(newestFirst)
	if newestFirst == nil {
		newestFirst = []contract.Ancestor{}
	}
	return contract.History{
		SchemaVersion: contract.HistorySchemaVersion, Time: s.now().UTC(), Champion: champion, Ancestors: newestFirst,
		Entries: entries, BoundBytes: s.bound, Dropped: dropped,
	}, nil
}

// Succession is the reigns (oldest first) after sha becomes the champion at now: the current
// reign ends, sha's begins, and what KeptAncestors would not keep is pruned.
func Succession(reigns []contract.Ancestor, sha string, now time.Time) []contract.Ancestor {
	next := slices.Clone(reigns)
	if n := len(next); n > 0 && next[n-1].Until == nil {
		until := now
		next[n-1].Until = &until
	}
	next = append(next, contract.Ancestor{SHA: sha, Since: now})
	kept := KeptAncestors(next, now)
	slices.Reverse(kept)
	return kept
}

// notRecorded refuses a run that already anchors an entry of the kind: a retried upload must not
// count a gate twice.
func (s *Store) notRecorded(kind, runID string) error {
	entries, _, err := s.Read()
	if err != nil {
		return err
	}
	if slices.ContainsFunc(entries, func(e contract.HistoryEntry) bool { return e.Kind == kind && e.RunID == runID }) {
		return refuse("%s: run %s is already recorded", kind, runID)
	}
	return nil
}

func decodeRecord(r io.Reader, v any, what string) error {
	b, err := io.ReadAll(io.LimitReader(r, maxRecordBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxRecordBytes {
		return refuse("%s: the record is longer than %d bytes", what, maxRecordBytes)
	}
	if err := contract.Decode(bytes.NewReader(b), v); err != nil {
		return refuse("%s: %v", what, err)
	}
	return nil
}

// IsRefusal reports whether err is a record the history refused as sent.
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}
