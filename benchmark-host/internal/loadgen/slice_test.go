package loadgen

import (
	"strings"
	"testing"
	"time"
)

// A request that left before its intended time means the schedule's clock is wrong: its
// latency, measured from the intended time, would read low. The slice says so and is not used.
func TestARequestSentBeforeItsIntendedTimeInvalidatesTheSlice(t *testing.T) {
	clock := newMonoClock()
	for _, c := range []struct {
		early time.Duration
		valid bool
	}{{0, true}, {20 * time.Microsecond, true}, {400 * time.Microsecond, false}} {
		a := &sliceShard{start: 0, end: time.Second}
		intended := 10 * time.Millisecond
		sent := intended - c.early
		a.add(&outcome{intended: intended, sent: sent, done: sent + 300*time.Microsecond, status: 200, record: true})
		s := mergeShards([]*sliceShard{a}).snapshot(clock, "champion", 0, false)
		if s.Valid != c.valid || (!c.valid && !strings.Contains(s.InvalidReason, "clock: 1 requests left before their intended time")) {
			t.Errorf("sent %v early: valid=%v reason=%q", c.early, s.Valid, s.InvalidReason)
		}
	}
}
