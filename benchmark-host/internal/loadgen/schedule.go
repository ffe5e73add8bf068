package loadgen

import (
	"math"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// schedule is the run's one absolute timeline: request k is due at t0 + k/rate, whatever
// lane sends it. Offsets are durations on the run's monotonic clock.
type schedule struct {
	clock     monoClock
	order     []int // the arm (0 champion, 1 challenger) of every slice
	t0        time.Duration
	warmupEnd time.Duration // offset of the first measured slice
	end       time.Duration
	period    float64 // ns between requests
	sliceDur  time.Duration
	sliceWarm time.Duration
	window    time.Duration // how late a request may leave to share a wake-up (send_window_us)
	// overrun is how long past the end of its slice (or of the warmup) a request may still
	// leave (timeout_ms): one not on the wire by then, because the generator or the queue for
	// the arm's connections is that far behind, is an overflow, so that a slice ends within
	// about two timeouts of its end however far behind the service or the generator is.
	overrun time.Duration
	// warmupLastSend is the warmup's last moment to send (its end plus overrun), computed
	// once: the dispatch loop compares with it, as with each slice's lastSend.
	warmupLastSend time.Duration
	firstK         []uint64 // the first request of every slice
	// Request classes each slice tallies on their own: the plan's entries, or 0 when there is one
	// or more than contract.MaxClasses (docs/design/0020-request-classes.md).
	classes int
}

func newSchedule(p *plan.Plan, clock monoClock, order []string, t0 time.Duration) *schedule {
	s := &schedule{
		clock:     clock,
		t0:        t0,
		period:    float64(time.Second) / p.Rate,
		sliceDur:  time.Duration(p.SliceSeconds * float64(time.Second)),
		sliceWarm: time.Duration(*p.SliceWarmupMs) * time.Millisecond,
		window:    time.Duration(*p.SendWindowUs) * time.Microsecond,
		overrun:   time.Duration(p.TimeoutMs) * time.Millisecond,
	}
	if n := len(p.Requests); n > 1 && n <= contract.MaxClasses {
		s.classes = n
	}
	for _, arm := range order {
		s.order = append(s.order, armIndex(arm))
	}
	s.warmupEnd = t0 + time.Duration(p.WarmupSeconds*float64(time.Second))
	s.warmupLastSend = s.warmupEnd + s.overrun
	s.end = s.warmupEnd + time.Duration(len(order))*s.sliceDur
	for i := range order {
		s.firstK = append(s.firstK, s.firstAtOrAfter(s.sliceStart(i)))
	}
	return s
}

// firstAtOrAfter is the first request due at or after offset off.
func (s *schedule) firstAtOrAfter(off time.Duration) uint64 {
	k := uint64(max(0, math.Ceil(float64(off-s.t0)/s.period)))
	for k > 0 && s.at(k-1) >= off {
		k--
	}
	for s.at(k) < off {
		k++
	}
	return k
}

// draw is what request k's random choices (its workload entry, {{rand}}) are drawn from: its
// position in its slice, the same in both slices of a pair, so the champion and the
// challenger of a pair get the same requests in the same order and at the same offsets
// (common random numbers). Drawn independently, a slice's share of a mix's rare slow requests
// varies (30 ± 5 of 1,500 at 2%), and the share moves its p99 (docs/design/0012-slice-design.md).
// Warmup requests draw from their seq.
func (s *schedule) draw(k uint64, slice int) uint64 {
	if slice < 0 {
		return k
	}
	return uint64(pairOf(slice)+1)<<32 | (k - s.firstK[slice])
}

// pairOf is the pair a slice belongs to: the plan's order lists each pair's two slices in turn.
func pairOf(slice int) int { return slice / 2 }

func armIndex(arm string) int {
	if arm == contract.Challenger {
		return 1
	}
	return 0
}

var armNames = [2]string{contract.Champion, contract.Challenger}

// at is the intended send offset of request k.
func (s *schedule) at(k uint64) time.Duration { return s.t0 + time.Duration(float64(k)*s.period) }

// sliceOf is the slice an offset falls in; -1 in the warmup.
func (s *schedule) sliceOf(off time.Duration) int {
	if off < s.warmupEnd {
		return -1
	}
	return int((off - s.warmupEnd) / s.sliceDur)
}

// sliceStart is the offset where slice i begins (i = len(order) gives the end).
func (s *schedule) sliceStart(i int) time.Duration { return s.warmupEnd + time.Duration(i)*s.sliceDur }
