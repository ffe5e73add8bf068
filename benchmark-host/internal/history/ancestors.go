package history

import (
	"slices"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// AncestorWeeks is how far back the host keeps champions for drift runs: one per week for 13
// weeks, a quarter (docs/design/0023-history.md).
const AncestorWeeks = 13

// DriftAge is the default drift ancestor's age: the champion of 30 days ago, so that a drift
// run measures the month the regression budget is kept over.
const DriftAge = 30 * 24 * time.Hour

const week = 7 * 24 * time.Hour

// servedAt reports whether a reigned at t.
func servedAt(a contract.Ancestor, t time.Time) bool {
	return !a.Since.After(t) && (a.Until == nil || a.Until.After(t))
}

// KeptAncestors are the reigns (oldest first) a host keeps at now, newest first: the champion
// now, and the one that served at the start of each of the last AncestorWeeks weeks (Mondays,
// 00:00 UTC). The moments are the calendar's, not now's, so a reign kept once stays kept until
// its Monday leaves the quarter, and one that held no Monday is pruned when it ends: it could
// never hold one later.
func KeptAncestors(reigns []contract.Ancestor, now time.Time) []contract.Ancestor {
	monday := weekStart(now)
	moments := []time.Time{now}
	for k := range AncestorWeeks {
		moments = append(moments, monday.Add(-time.Duration(k)*week))
	}
	var kept []contract.Ancestor
	for i := len(reigns) - 1; i >= 0; i-- {
		if slices.ContainsFunc(moments, func(t time.Time) bool { return servedAt(reigns[i], t) }) {
			kept = append(kept, reigns[i])
		}
	}
	return kept
}

// weekStart is the Monday 00:00 UTC at or before t.
func weekStart(t time.Time) time.Time {
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day.AddDate(0, 0, -(int(day.Weekday())+6)%7)
}

// DriftAncestor is the newest kept reign that began at least age before now: with one champion
// kept per week, one promoted between age and age plus a week ago. None when the host's first
// champion is younger.
func DriftAncestor(ancestors []contract.Ancestor, now time.Time, age time.Duration) (contract.Ancestor, bool) {
	best := -1
	for i, a := range ancestors {
		if !a.Since.After(now.Add(-age)) && (best < 0 || a.Since.After(ancestors[best].Since)) {
			best = i
		}
	}
	if best < 0 {
		return contract.Ancestor{}, false
	}
	return ancestors[best], true
}

// LastGate is the newest gate entry of a pull request (when pr is not 0) or else of the build
// sha: the step a promotion of it takes main by. ok is false when none is in the history.
func LastGate(entries []contract.HistoryEntry, pr int, sha string) (contract.Step, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		g := entries[i].Gate
		if g == nil {
			continue
		}
		if pr != 0 && g.PullRequest == pr || pr == 0 && g.ChallengerSHA == sha {
			return contract.Step{Gated: entries[i].Time, Gate: *g}, true
		}
	}
	return contract.Step{}, false
}
