package store

import (
	"os"
	"slices"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// State is the champion pointer and the service spec it runs with.
type State struct {
	Champion string               `json:"champion,omitempty"`
	Service  contract.ServiceSpec `json:"service"`
	// History holds the earlier champions, oldest first, each with the spec it ran with; a
	// rollback restores the last one and drops it, so a failed promotion leaves no trace.
	History []Reign `json:"history,omitempty"`
	// LegacyPrevious is the one earlier champion a state written before History named;
	// LoadState moves it into History.
	LegacyPrevious string `json:"previous,omitempty"`
	// Ancestors are the champions kept for drift runs, oldest first, the champion last: one per
	// week for 13 weeks (history.KeptAncestors); their releases are never pruned.
	Ancestors []contract.Ancestor `json:"ancestors,omitempty"`
	Updated   time.Time           `json:"updated"`
	// ChampionSince is when Champion became the champion here, promoted or rolled back to; a
	// new spec for the same champion, or a restore after a failed promotion, keeps it. A pool's
	// champion is the one made most recently on any of its hosts
	// (docs/design/0026-a-pool-of-hosts.md).
	ChampionSince time.Time `json:"champion_since"`
}

// Replacing is st as it replaces old, with its ChampionSince: now for another champion, old's
// for the same one.
func (st State) Replacing(old State, now time.Time) State {
	st.ChampionSince = old.ChampionSince
	if st.Champion != old.Champion {
		st.ChampionSince = now.UTC()
	}
	return st
}

// Reign is one earlier champion.
type Reign struct {
	SHA     string               `json:"sha"`
	Service contract.ServiceSpec `json:"service"`
}

// MaxHistory bounds the champions kept for rollback (their releases are never pruned).
const MaxHistory = 5

// LastReign is the champion a rollback would restore, or "".
func LastReign(history []Reign) string {
	if len(history) == 0 {
		return ""
	}
	return history[len(history)-1].SHA
}

// Protected reports whether sha is the champion, one a rollback may restore, or an ancestor a
// drift run may measure against.
func (s State) Protected(sha string) bool {
	return sha == s.Champion || s.Ancestor(sha) ||
		slices.ContainsFunc(s.History, func(r Reign) bool { return r.SHA == sha })
}

// Ancestor reports whether sha is a champion the host keeps for drift runs.
func (s State) Ancestor(sha string) bool {
	return slices.ContainsFunc(s.Ancestors, func(a contract.Ancestor) bool { return a.SHA == sha })
}

// LoadState reads the champion pointer; a missing file is the empty state.
func (s *Store) LoadState() (State, error) {
	var st State
	err := ReadJSON(s.Path("state.json"), &st)
	if os.IsNotExist(err) {
		return st, nil
	}
	service.FillDefaults(&st.Service)
	for i := range st.History {
		service.FillDefaults(&st.History[i].Service)
	}
	if st.ChampionSince.IsZero() && st.Champion != "" {
		// A state written before it kept the time: its last change, which is its champion's
		// unless a failed promotion restored it.
		st.ChampionSince = st.Updated
	}
	if len(st.History) == 0 && st.LegacyPrevious != "" {
		// A state written before champions were kept as a history: its previous champion ran
		// with the only spec it recorded.
		st.History = []Reign{{SHA: st.LegacyPrevious, Service: st.Service}}
		st.LegacyPrevious = ""
	}
	return st, err
}

// SaveState replaces the champion pointer.
func (s *Store) SaveState(st State) error {
	st.Updated = time.Now().UTC()
	return WriteJSONAtomic(s.Path("state.json"), st)
}
