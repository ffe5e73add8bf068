package loadgen

import (
	"testing"
	"time"
)

// A stall inside the first bracket (the thread descheduled between the raw reading and the
// second Go reading) must not become the mapping: it would shift every send by half of it.
func TestClockMappingSurvivesAStallInsideTheBracket(t *testing.T) {
	var ns int64 = 1_000_000_000 // one timeline for both clocks: the true mapping is identity
	calls := 0
	now := func() time.Time {
		calls++
		if calls == 2 {
			ns += 3_000_000 // 3 ms stall before the first bracket closes
		}
		ns += 200
		return time.Unix(0, ns)
	}
	mono := func() int64 { ns += 200; return ns }
	c := calibrateMonoClock(now, mono)
	if errNs := c.base.UnixNano() - c.baseMono; errNs < -1000 || errNs > 1000 {
		t.Fatalf("mapping off by %v after a stalled bracket (want under 1 µs)", time.Duration(errNs))
	}
}

// With the real clocks, a wake-up is never before its intended time: a request sent early
// would show a latency below its own service time.
func TestSleepUntilNeverWakesBeforeTheIntendedTime(t *testing.T) {
	c := newMonoClock()
	pinDispatcherThread()
	start := c.since(time.Now())
	var earliest time.Duration = 1 << 62
	for i := 1; i <= 300; i++ {
		off := start + time.Duration(i)*200*time.Microsecond
		c.sleepUntil(off)
		earliest = min(earliest, time.Since(c.at(off)))
	}
	if earliest < -2*time.Microsecond {
		t.Fatalf("woke %v before the intended time", -earliest)
	}
	t.Logf("earliest wake-up relative to the intended time: %v", earliest)
}
