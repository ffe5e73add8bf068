package store

import (
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// gc never prunes the release of an ancestor a drift run may measure against, though no
// rollback would restore it (docs/design/0023-history.md).
func TestAnAncestorsReleaseIsProtected(t *testing.T) {
	st := State{
		Champion:  "ccccccc",
		History:   []Reign{{SHA: "bbbbbbb"}},
		Ancestors: []contract.Ancestor{{SHA: "aaaaaaa", Since: time.Now().Add(-40 * 24 * time.Hour)}, {SHA: "ccccccc", Since: time.Now()}},
	}
	for sha, want := range map[string]bool{"ccccccc": true, "bbbbbbb": true, "aaaaaaa": true, "ddddddd": false} {
		if got := st.Protected(sha); got != want {
			t.Errorf("Protected(%s) = %v, want %v", sha, got, want)
		}
	}
	if !st.Ancestor("aaaaaaa") || st.Ancestor("bbbbbbb") {
		t.Error("Ancestor names only the kept champions")
	}
}

// A champion's time is when it became the champion: a new champion (a promotion or a rollback)
// takes the time of the change, the same champion with a new spec keeps its own, and a state
// written before the time was kept takes its last change.
func TestChampionSince(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	old := State{Champion: "aaaaaaa", ChampionSince: t0}
	if got := (State{Champion: "bbbbbbb"}).Replacing(old, t1).ChampionSince; !got.Equal(t1) {
		t.Errorf("a new champion: since %v, want %v", got, t1)
	}
	if got := (State{Champion: "aaaaaaa"}).Replacing(old, t1).ChampionSince; !got.Equal(t0) {
		t.Errorf("the same champion with a new spec: since %v, want %v (unchanged)", got, t0)
	}

	s := &Store{Root: t.TempDir()}
	if err := WriteJSONAtomic(s.Path("state.json"), map[string]any{"champion": "aaaaaaa", "updated": t0}); err != nil {
		t.Fatal(err)
	}
	st, err := s.LoadState()
	if err != nil || !st.ChampionSince.Equal(t0) {
		t.Errorf("a state from before: since %v (%v), want its last change %v", st.ChampionSince, err, t0)
	}
	if err := WriteJSONAtomic(s.Path("state.json"), map[string]any{"updated": t0}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.LoadState(); !st.ChampionSince.IsZero() {
		t.Errorf("no champion: since %v, want none", st.ChampionSince)
	}
}
