package loadgen

import (
	"fmt"
	"strings"
	"sync"
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

// sliceAcc accumulates one slice. The dispatcher owns scheduled/overflow until it closes
// dispatched; workers add outcomes under mu; the reporter reads after pending drains.
type sliceAcc struct {
	index       int
	arm         string
	queue       *jobQueue // the arm's queue, so the dispatcher needs no lookup per request
	start, end  time.Time // the slice's window on the schedule
	dispatched  chan struct{}
	interrupted bool
	stoppedAt   time.Time
	pending     sync.WaitGroup

	scheduled, overflow int64

	mu                 sync.Mutex
	sent, inWindow     int64
	completed, ok      int64
	recorded, newConns int64
	early              int64 // sent before their intended time
	errs               contract.ErrorCounts
	latency, svc, lag  *hdrhistogram.Histogram
}

func newSliceAcc(index int, arm string, queue *jobQueue, start, end time.Time) *sliceAcc {
	return &sliceAcc{index: index, arm: arm, queue: queue, start: start, end: end, dispatched: make(chan struct{})}
}

// allocate creates the histograms when the slice's first request completes, so a long run
// holds only the slices in flight (a slice's first requests fall in its unrecorded warmup).
func (a *sliceAcc) allocate() {
	a.latency = hdrhistogram.New(1, maxLatencyUs, 3)
	a.svc = hdrhistogram.New(1, maxServiceUs, 2)
	a.lag = hdrhistogram.New(1, maxServiceUs, 2)
}

// outcome is one finished request.
type outcome struct {
	intended, sent, done time.Time
	status               int // 0 when the request failed without a response
	errClass             errClass
	record               bool
	newConn              bool
}

type errClass uint8

const (
	errNone errClass = iota
	errConnect
	errTimeout
	errOther
)

func (a *sliceAcc) add(o *outcome) {
	latency := clampUs(o.done.Sub(o.intended), maxLatencyUs)
	service := clampUs(o.done.Sub(o.sent), maxServiceUs)
	lag := clampUs(o.sent.Sub(o.intended), maxServiceUs)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.latency == nil {
		a.allocate()
	}
	a.sent++
	a.completed++
	if o.sent.Before(a.end) {
		a.inWindow++
	}
	if o.newConn {
		a.newConns++
	}
	if o.intended.Sub(o.sent) > earlyTolerance {
		a.early++
	}
	switch {
	case o.errClass == errConnect:
		a.errs.Connect++
	case o.errClass == errTimeout:
		a.errs.Timeout++
	case o.errClass == errOther:
		a.errs.Other++
	case o.status >= 500:
		a.errs.Status5++
	case o.status >= 400:
		a.errs.Status4++
	default:
		a.ok++
	}
	// Any answer and any timeout is latency a user felt; a refused connection is not.
	if o.record && o.errClass != errConnect && o.errClass != errOther {
		a.recorded++
		a.latency.RecordValue(latency)
		a.svc.RecordValue(service)
		a.lag.RecordValue(lag)
	}
}

// earlyTolerance is how far before its intended time a request may leave (the clock
// mapping's error); earlier means the schedule is wrong and the latencies read low.
const earlyTolerance = 50 * time.Microsecond

func clampUs(d time.Duration, hi int64) int64 {
	us := d.Microseconds()
	return max(0, min(us, hi))
}

// snapshot turns the finished accumulator into the slice's result record.
func (a *sliceAcc) snapshot(pair int) contract.Slice {
	end := a.end
	if a.interrupted {
		end = a.stoppedAt
	}
	seconds := end.Sub(a.start).Seconds()
	if a.latency == nil {
		a.allocate()
	}
	s := contract.Slice{
		Index: a.index, Pair: pair, Arm: a.arm, Start: a.start, End: end,
		Scheduled: a.scheduled, Sent: a.sent, Completed: a.completed, OK: a.ok,
		Recorded: a.recorded, Errors: a.errs, Overflow: a.overflow, NewConnections: a.newConns,
		LatencyUs: contract.Latency{
			P50: a.latency.ValueAtQuantile(50), P90: a.latency.ValueAtQuantile(90),
			P99: a.latency.ValueAtQuantile(99), P999: a.latency.ValueAtQuantile(99.9),
			Max: a.latency.Max(),
		},
		ServiceTimeUs: contract.Quantiles2{P50: a.svc.ValueAtQuantile(50), P99: a.svc.ValueAtQuantile(99)},
		DispatchLagUs: contract.Quantiles2{P50: a.lag.ValueAtQuantile(50), P99: a.lag.ValueAtQuantile(99)},
		ShortOfBudget: []string{},
	}
	if seconds > 0 {
		s.AchievedRPS = float64(a.inWindow) / seconds
		s.OKRPS = float64(a.ok) / seconds
	}
	if enc, err := a.latency.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		s.Histogram = string(enc)
	}
	for _, b := range contract.BudgetedPercentiles {
		if a.recorded < contract.SampleBudget(b.Percentile) {
			s.ShortOfBudget = append(s.ShortOfBudget, b.Name)
		}
	}
	var reasons []string
	if a.interrupted {
		reasons = append(reasons, "interrupted: the run was stopped during this slice")
	}
	if a.overflow > 0 {
		reasons = append(reasons, fmt.Sprintf("overflow: %d requests found the queue full and were not sent", a.overflow))
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
	a.latency, a.svc, a.lag = nil, nil, nil
	return s
}

// progressLine is the one-line summary printed on stderr when a slice is done.
func progressLine(s *contract.Slice, total int) string {
	state := "valid"
	if !s.Valid {
		state = "INVALID (" + s.InvalidReason + ")"
	}
	return fmt.Sprintf("slice %d/%d %-10s p50=%.3fms p99=%.3fms rate=%.1f/s sent=%d errors=%d new_conns=%d lag_p99=%dus %s",
		s.Index+1, total, s.Arm, float64(s.LatencyUs.P50)/1000, float64(s.LatencyUs.P99)/1000,
		s.AchievedRPS, s.Sent, s.Errors.Total(), s.NewConnections, s.DispatchLagUs.P99, state)
}
