package loadgen

import (
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Histogram ranges in µs. Corrected latency can exceed the request timeout by the time a
// request waited in the queue, so its range reaches an hour.
const (
	maxLatencyUs = 3_600_000_000
	maxServiceUs = 600_000_000
)

// sliceShard is one lane's share of one slice. Only its lane writes it, with no lock; the
// reporter merges the lanes' shards once each lane has published its own (when the lane's
// schedule has passed the slice and every request of it has finished).
type sliceShard struct {
	slice int
	lane  int
	start time.Duration // the slice's window on the schedule
	end   time.Duration
	// lastSend is the last moment a request of the slice may leave: end plus schedule.overrun.
	lastSend time.Duration
	// interruptedAt is where the lane stopped inside this slice (0: it did not).
	interruptedAt time.Duration

	// Process CPU clock and schedule offset when the lane entered and left the slice's window;
	// known is false for a lane that skipped the slice (too few requests to reach it).
	cpuIn, cpuOut   time.Duration
	wallIn, wallOut time.Duration
	known           bool

	open      int  // requests of this slice queued or in flight in the lane
	passed    bool // the lane's schedule is past the slice's end
	published bool
	// abandoned says the run was stopped with requests of this slice still queued or in
	// flight in the lane: they are not accounted, and the slice is interrupted.
	abandoned bool

	scheduled, overflow int64
	// Requests finished (answered or failed): a request is accounted once, when it finishes, so
	// the slice's sent and completed counts are both tally.completed.
	tally
	inWindow int64
	newConns int64
	early    int64 // sent before their intended time
	// Service time, the generator's own lag, and the wait for a connection.
	svc, lag, wait *hdrhistogram.Histogram
	// Each request class's tally (the plan's requests, in order); nil for a workload of one
	// entry or of more than contract.MaxClasses (docs/design/0020-request-classes.md).
	classes []tally
}

// tally is what a slice and each of its request classes count: requests finished, answered
// with success, failed by kind, and the corrected latency of those recorded.
type tally struct {
	completed, ok, recorded int64
	errs                    contract.ErrorCounts
	latency                 *hdrhistogram.Histogram
}

// allocate makes one shard's histograms.
func (a *sliceShard) allocate() {
	a.latency = newLatency()
	a.svc = hdrhistogram.New(1, maxServiceUs, 2)
	a.lag = hdrhistogram.New(1, maxServiceUs, 2)
	a.wait = hdrhistogram.New(1, maxServiceUs, 2)
}

// newLatency is a latency histogram. A request class's is made when it records its first
// request, not with the slice's: up to contract.MaxClasses of them at ~190 KB each would
// otherwise be allocated and zeroed on a lane's completion path at every slice start.
func newLatency() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxLatencyUs, 3) }

// outcome is one finished request; times are offsets on the run's clock. A request is
// intended on the schedule, dispatched when its lane gets to it, sent when a connection of
// its arm is free, and done when answered or failed.
type outcome struct {
	intended, dispatched, sent, done time.Duration
	status                           int // 0 when the request failed without a response
	errClass                         errClass
	grpcCode                         uint32 // the gRPC status of an errGRPC
	record                           bool
	newConn                          bool
	entry                            int // the workload entry (request class) it was drawn from
}

// ok reports whether the request was answered with success.
func (o *outcome) ok() bool { return o.errClass == errNone && o.status < 400 }

type errClass uint8

const (
	errNone errClass = iota
	errConnect
	errTimeout
	errOther
	errGRPC // a gRPC call answered with a status other than OK
)

func (c errClass) String() string {
	return [...]string{"ok", "connection refused or failed", "timed out", "request failed", "gRPC status"}[c]
}

func (a *sliceShard) add(o *outcome) {
	if a.latency == nil {
		a.allocate()
	}
	// The generator's pace: what it dispatched in the window, whether or not a connection was
	// free (a slow service holding every connection is measured, not the generator's fault).
	if o.dispatched < a.end {
		a.inWindow++
	}
	if o.newConn {
		a.newConns++
	}
	if o.intended-o.sent > earlyTolerance {
		a.early++
	}
	if a.tally.add(o) {
		a.svc.RecordValue(clampUs(o.done-o.sent, maxServiceUs))
		a.lag.RecordValue(clampUs(o.dispatched-o.intended, maxServiceUs))
		a.wait.RecordValue(clampUs(o.sent-o.dispatched, maxServiceUs))
	}
	if a.classes != nil {
		a.classes[o.entry].add(o)
	}
}

// add counts one finished request and records its latency when it is to be recorded, which it
// reports.
func (t *tally) add(o *outcome) bool {
	t.completed++
	switch {
	case o.errClass == errConnect:
		t.errs.Connect++
	case o.errClass == errTimeout:
		t.errs.Timeout++
	case o.errClass == errOther:
		t.errs.Other++
	case o.errClass == errGRPC:
		if t.errs.GRPC == nil {
			t.errs.GRPC = map[string]int64{}
		}
		t.errs.GRPC[grpcCodeName(o.grpcCode)]++
	case o.status >= 500:
		t.errs.Status5++
	case o.status >= 400:
		t.errs.Status4++
	default:
		t.ok++
	}
	// Any answer and any timeout is latency a user felt; a refused connection is not.
	if !o.record || o.errClass == errConnect || o.errClass == errOther {
		return false
	}
	t.recorded++
	if t.latency == nil {
		t.latency = newLatency()
	}
	t.latency.RecordValue(clampUs(o.done-o.intended, maxLatencyUs))
	return true
}

// merge adds b's counts and latencies to t's.
func (t *tally) merge(b *tally) {
	t.completed += b.completed
	t.ok += b.ok
	t.recorded += b.recorded
	t.errs.Connect += b.errs.Connect
	t.errs.Timeout += b.errs.Timeout
	t.errs.Status4 += b.errs.Status4
	t.errs.Status5 += b.errs.Status5
	t.errs.Other += b.errs.Other
	for code, n := range b.errs.GRPC {
		if t.errs.GRPC == nil {
			t.errs.GRPC = map[string]int64{}
		}
		t.errs.GRPC[code] += n
	}
	if b.latency != nil {
		if t.latency == nil {
			t.latency = newLatency()
		}
		t.latency.Merge(b.latency)
	}
}

// shortOfBudget names the percentiles too few of the tally's requests were recorded for.
func (t *tally) shortOfBudget() []string {
	short := []string{}
	for _, b := range contract.BudgetedPercentiles {
		if t.recorded < contract.SampleBudget(b.Percentile) {
			short = append(short, b.Name)
		}
	}
	return short
}

// class is the result record of one request class's tally.
func (t *tally) class() contract.ClassSlice {
	if t.latency == nil {
		t.latency = newLatency() // nothing recorded: an empty histogram says so
	}
	c := contract.ClassSlice{Completed: t.completed, OK: t.ok, Recorded: t.recorded, Errors: t.errs,
		LatencyUs: percentiles(t.latency), ShortOfBudget: t.shortOfBudget()}
	if enc, err := t.latency.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		c.Histogram = string(enc)
	}
	return c
}

// earlyTolerance is how far before its intended time a request may leave; earlier means the
// schedule is wrong and the latencies read low.
const earlyTolerance = 50 * time.Microsecond

func clampUs(d time.Duration, hi int64) int64 {
	us := d.Microseconds()
	return max(0, min(us, hi))
}

// mergeShards sums the lanes' shards of one slice into the first.
func mergeShards(shards []*sliceShard) *sliceShard {
	a := shards[0]
	if a.latency == nil {
		a.allocate()
	}
	for _, b := range shards[1:] {
		a.interruptedAt = max(a.interruptedAt, b.interruptedAt)
		if b.known {
			if !a.known {
				a.cpuIn, a.wallIn, a.cpuOut, a.wallOut, a.known = b.cpuIn, b.wallIn, b.cpuOut, b.wallOut, true
			}
			if b.wallIn < a.wallIn {
				a.cpuIn, a.wallIn = b.cpuIn, b.wallIn
			}
			if b.wallOut > a.wallOut {
				a.cpuOut, a.wallOut = b.cpuOut, b.wallOut
			}
		}
		a.scheduled += b.scheduled
		a.overflow += b.overflow
		a.inWindow += b.inWindow
		a.newConns += b.newConns
		a.early += b.early
		a.tally.merge(&b.tally)
		for i := range b.classes {
			a.classes[i].merge(&b.classes[i])
		}
		if b.latency != nil {
			a.svc.Merge(b.svc)
			a.lag.Merge(b.lag)
			a.wait.Merge(b.wait)
		}
	}
	return a
}

// snapshot turns a merged slice into its result record; interrupted says the run stopped in
// it (a lane stopped inside it, or some lane never reached it).
func (a *sliceShard) snapshot(clock monoClock, arm string, pair int, interrupted bool) contract.Slice {
	end := a.end
	if interrupted && a.interruptedAt > a.start {
		end = min(a.end, a.interruptedAt)
	}
	seconds := (end - a.start).Seconds()
	if a.latency == nil {
		a.allocate()
	}
	s := contract.Slice{
		Index: a.slice, Pair: pair, Arm: arm, Start: clock.at(a.start), End: clock.at(end),
		Scheduled: a.scheduled, Sent: a.completed, Completed: a.completed, OK: a.ok,
		Recorded: a.recorded, Errors: a.errs, Overflow: a.overflow, NewConnections: a.newConns,
		LatencyUs:        percentiles(a.latency),
		ServiceTimeUs:    contract.Quantiles2{P50: a.svc.ValueAtQuantile(50), P99: a.svc.ValueAtQuantile(99)},
		DispatchLagUs:    percentiles(a.lag),
		ConnectionWaitUs: contract.Quantiles2{P50: a.wait.ValueAtQuantile(50), P99: a.wait.ValueAtQuantile(99)},
	}
	if seconds > 0 {
		s.AchievedRPS = float64(a.inWindow) / seconds
		s.OKRPS = float64(a.ok) / seconds
	}
	if wall := a.wallOut - a.wallIn; a.known && wall > 0 {
		cpu := a.cpuOut - a.cpuIn
		s.GeneratorCPUCores = cpu.Seconds() / wall.Seconds()
		if a.completed > 0 {
			s.GeneratorCPUUsPerRequest = float64(cpu.Nanoseconds()) / 1e3 / float64(a.completed)
		}
	}
	if enc, err := a.latency.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		s.Histogram = string(enc)
	}
	s.ShortOfBudget = a.shortOfBudget()
	for i := range a.classes {
		s.Classes = append(s.Classes, a.classes[i].class())
	}
	var reasons []string
	if interrupted {
		reasons = append(reasons, "interrupted: the run was stopped during this slice")
	}
	if a.overflow > 0 {
		reasons = append(reasons, fmt.Sprintf("overflow: %d requests found the queue full, or were still unsent timeout_ms past the slice's end, and were not sent", a.overflow))
	}
	if a.recorded == 0 {
		reasons = append(reasons, "no requests recorded")
	}
	if a.early > 0 {
		reasons = append(reasons, fmt.Sprintf("clock: %d requests left before their intended time, so latency from it would read low", a.early))
	}
	s.Valid = len(reasons) == 0
	s.InvalidReason = strings.Join(reasons, "; ")
	// The histograms are encoded; free them so long runs stay small.
	a.latency, a.svc, a.lag, a.wait, a.classes = nil, nil, nil, nil, nil
	return s
}

// progressLine is the one-line summary printed on stderr when a slice is done.
func progressLine(s *contract.Slice, total int) string {
	state := "valid"
	switch {
	case !s.Valid:
		state = "INVALID (" + s.InvalidReason + ")"
	case s.HostDisturbance != "":
		state = "DISTURBED (" + s.HostDisturbance + ")"
	}
	return fmt.Sprintf("slice %d/%d %-10s p50=%.3fms p99=%.3fms rate=%.1f/s sent=%d errors=%d new_conns=%d lag_p99=%dus gen_cpu=%.2f %s",
		s.Index+1, total, s.Arm, float64(s.LatencyUs.P50)/1000, float64(s.LatencyUs.P99)/1000,
		s.AchievedRPS, s.Sent, s.Errors.Total(), s.NewConnections, s.DispatchLagUs.P99, s.GeneratorCPUCores, state)
}

// percentiles are a histogram's named percentiles and maximum.
func percentiles(h *hdrhistogram.Histogram) contract.Latency {
	return contract.Latency{P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P99: h.ValueAtQuantile(99),
		P999: h.ValueAtQuantile(99.9), Max: h.Max()}
}
