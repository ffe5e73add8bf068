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
