package history

import (
	"slices"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// reigns are champions promoted at the given days after t0, each reigning until the next.
func reigns(days ...float64) []contract.Ancestor {
	var out []contract.Ancestor
	for i, d := range days {
		a := contract.Ancestor{SHA: "sha" + string(rune('a'+i)) + "000", Since: t0.Add(time.Duration(d * 24 * float64(time.Hour)))}
		if i+1 < len(days) {
			a.Until = ptr(t0.Add(time.Duration(days[i+1] * 24 * float64(time.Hour))))
		}
		out = append(out, a)
	}
	return out
}

func shas(as []contract.Ancestor) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.SHA)
	}
	return out
}

func TestKeepsOneChampionPerWeekForAQuarterAndTheDriftAncestor(t *testing.T) {
	// A promotion every day for 120 days.
	days := make([]float64, 120)
	for i := range days {
		days[i] = float64(i)
	}
	all := reigns(days...)
	now := t0.Add(119*24*time.Hour + 12*time.Hour)
	kept := KeptAncestors(all, now)
	// The champion now and the one of each of the 13 Mondays before.
	if len(kept) != 14 {
		t.Fatalf("kept %d: %v", len(kept), shas(kept))
	}
	for i := 1; i < len(kept); i++ {
		if !kept[i].Since.Before(kept[i-1].Since) {
			t.Fatalf("not newest first: %v", shas(kept))
		}
	}
	if oldest := kept[len(kept)-1].Since; oldest.Before(now.Add(-(AncestorWeeks + 1) * week)) {
		t.Errorf("kept a champion from %v, older than the quarter", oldest)
	}
	// No week of the quarter is without a kept champion.
	for k := range AncestorWeeks {
		at := now.Add(-time.Duration(k) * week)
		if !slices.ContainsFunc(kept, func(a contract.Ancestor) bool { return !a.Since.After(at) && a.Since.After(at.Add(-2*week)) }) {
			t.Errorf("no champion kept from the fortnight before %d weeks ago", k)
		}
	}
	a, ok := DriftAncestor(kept, now, DriftAge)
	if age := now.Sub(a.Since); !ok || age < DriftAge || age > DriftAge+week {
		t.Fatalf("drift ancestor %+v (%v old), %v: want one promoted 30 to 37 days ago", a, age, ok)
	}
	// Pruning is stable: what was kept is kept again a moment later, and every day after it,
	// each day's kept ancestors (pruned as the host prunes) still have one per week.
	if again := KeptAncestors(kept, now.Add(time.Minute)); len(again) != len(kept) {
		t.Errorf("pruned again to %d", len(again))
	}
	pruned := KeptAncestors(all[:60], t0.Add(60*24*time.Hour))
	slices.Reverse(pruned)
	for day := 60; day < 120; day++ {
		at := t0.Add(time.Duration(day)*24*time.Hour + time.Hour)
		pruned[len(pruned)-1].Until = &all[day].Since
		pruned = append(pruned, all[day])
		pruned = KeptAncestors(pruned, at)
		slices.Reverse(pruned)
		if a, ok := DriftAncestor(pruned, at, DriftAge); !ok || at.Sub(a.Since) > DriftAge+week {
			t.Fatalf("day %d: drift ancestor %+v, %v", day, a, ok)
		}
	}
}

func TestAYoungHostHasNoDriftAncestor(t *testing.T) {
	// t0 is a Thursday: Mondays on days 4, 11 and 18 (and before the host).
	kept := KeptAncestors(reigns(0, 3, 10), t0.Add(20*24*time.Hour))
	if len(kept) != 2 {
		t.Fatalf("kept %v", shas(kept))
	}
	if a, ok := DriftAncestor(kept, t0.Add(20*24*time.Hour), DriftAge); ok {
		t.Fatalf("drift ancestor %+v on a 20-day-old host", a)
	}
}

func TestLastGateOfAPullRequestOrABuild(t *testing.T) {
	entries := []contract.HistoryEntry{
		{Kind: contract.HistoryGate, Time: t0, Gate: gate(7, "abc1234")},
		{Kind: contract.HistoryGate, Time: t0.Add(time.Hour), Gate: gate(7, "def5678")},
		{Kind: contract.HistoryGate, Time: t0.Add(2 * time.Hour), Gate: gate(8, "aaa1111")},
	}
	if s, ok := LastGate(entries, 7, "ffff000"); !ok || s.Gate.ChallengerSHA != "def5678" || !s.Gated.Equal(t0.Add(time.Hour)) {
		t.Errorf("pull request 7: %+v %v", s, ok)
	}
	if s, ok := LastGate(entries, 0, "abc1234"); !ok || s.Gate.PullRequest != 7 {
		t.Errorf("build abc1234: %+v %v", s, ok)
	}
	if _, ok := LastGate(entries, 9, "abc1234"); ok {
		t.Error("pull request 9 has no gate")
	}
}
