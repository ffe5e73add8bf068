package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// runWithin runs p under ctx and fails the test when Run has not returned within limit of
// after (the cancel, or the run's start) instead of waiting for it.
// abortAfter runs the plan and cancels it after d, as perf-host abort does; the run must return
// within 3 s of the cancel.
func abortAfter(t *testing.T, p *plan.Plan, d time.Duration) *contract.Result {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancelled := make(chan time.Time, 1)
	time.AfterFunc(d, func() {
		cancelled <- time.Now()
		cancel(errors.New("test abort"))
	})
	res, took := runWithin(t, ctx, p, 20*time.Second, cancelled)
	if took > 3*time.Second {
		t.Errorf("the run returned %v after the cancel, want within 3 s", took)
	}
	return res
}

// runEndsWithin runs the plan to its end, which must come within d of its start.
func runEndsWithin(t *testing.T, p *plan.Plan, d time.Duration) *contract.Result {
	t.Helper()
	started := make(chan time.Time, 1)
	started <- time.Now()
	res, took := runWithin(t, context.Background(), p, 20*time.Second, started)
	if took > d {
		t.Errorf("the run took %v for its %g s of slices with timeout_ms %d, want within %v", took, p.SliceSeconds*float64(2*p.Pairs), p.TimeoutMs, d)
	}
	return res
}

func runWithin(t *testing.T, ctx context.Context, p *plan.Plan, limit time.Duration, after <-chan time.Time) (*contract.Result, time.Duration) {
	t.Helper()
	type ran struct {
		res *contract.Result
		err error
	}
	done := make(chan ran, 1)
	var progress strings.Builder
	go func() {
		res, err := Run(ctx, p, &progress)
		done <- ran{res, err}
	}()
	from := <-after
	select {
	case r := <-done:
		took := time.Since(from)
		t.Logf("returned %v after it began to end\n%s", took, progress.String())
		if r.err != nil {
			t.Fatalf("run: %v", r.err)
		}
		return r.res, took
	case <-time.After(limit):
		buf := make([]byte, 1<<20)
		t.Fatalf("the run had not returned %v after it should have ended; its goroutines:\n%s", limit, buf[:runtime.Stack(buf, true)])
	}
	return nil, 0
}

// A cancelled run ends the slice in flight at once, however far beyond the service the rate
// is: the requests queued for a connection are dropped and those on the wire abandoned, their
// connections closed, not sent and waited for (a rate 400 times what the service answers once
// kept the run going for minutes after an abort). timeout_ms is long here so that nothing but
// the cancel can end the run in time.
func TestCancelEndsTheRunPromptlyWhenTheServiceIsFarBehind(t *testing.T) {
	slow := newServer(t, 50*time.Millisecond, nil) // 2 connections × 1/50 ms = 40 req/s
	var n atomic.Int64
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			return // the priming requests, one per connection
		}
		select { // then nothing, until the generator gives up on the request
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(hung.Close)
	p := mustPlan(t, planJSON(slow.URL, hung.URL,
		`"rate":16000,"slice_seconds":1,"pairs":2,"seed":1,"connections":2,"slice_warmup_ms":0,"timeout_ms":10000,"requests":[{"path":"/"}]`))
	res := abortAfter(t, p, 1500*time.Millisecond)
	if !res.Partial || !strings.Contains(res.PartialReason, "test abort") || len(res.Slices) == 0 {
		t.Errorf("partial=%v reason=%q, %d slices", res.Partial, res.PartialReason, len(res.Slices))
	}
	for _, s := range res.Slices {
		if s.Valid {
			t.Errorf("slice %d valid, but its requests could not all be answered: %+v", s.Index, s)
		}
		if s.Sent+s.Overflow > s.Scheduled || s.Completed != s.Sent {
			t.Errorf("slice %d: scheduled %d, sent %d, completed %d, overflow %d", s.Index, s.Scheduled, s.Sent, s.Completed, s.Overflow)
		}
	}
	if last := len(res.Slices) - 1; last >= 0 && !strings.Contains(res.Slices[last].InvalidReason, "interrupted") {
		t.Errorf("the last slice reported is not marked interrupted: %q", res.Slices[last].InvalidReason)
	}
}

// A generator hopelessly behind its schedule (here a service answering 1 in 100 of the
// rate, with a queue deep enough for the whole slice) does not send every request of a slice
// late, one after the other, for 100 times the slice: a request not on the wire timeout_ms
// past its slice's end is lost, an overflow, and the slice ends within about two timeouts of
// its planned end, invalid.
func TestASliceFarBehindItsScheduleEndsNearItsPlannedEnd(t *testing.T) {
	slow := newServer(t, 50*time.Millisecond, nil) // 2 connections × 1/50 ms = 40 req/s
	fast := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(fast.URL, slow.URL,
		`"rate":4000,"slice_seconds":0.5,"pairs":1,"seed":1,"connections":2,"timeout_ms":200,"max_queue":100000,"requests":[{"path":"/"}]`))
	// 1 s of slices, then at most a timeout queued and a timeout on the wire.
	res := runEndsWithin(t, p, 2500*time.Millisecond)
	if res.Partial || len(res.Slices) != 2 {
		t.Fatalf("partial=%v (%s), %d slices", res.Partial, res.PartialReason, len(res.Slices))
	}
	champ, chall := res.Slices[0], res.Slices[1]
	if !champ.Valid {
		t.Errorf("champion slice invalid: %s", champ.InvalidReason)
	}
	if chall.Valid || chall.Overflow < chall.Scheduled/2 || !strings.Contains(chall.InvalidReason, "overflow") {
		t.Errorf("challenger slice: valid=%v overflow=%d of %d scheduled, reason=%q", chall.Valid, chall.Overflow, chall.Scheduled, chall.InvalidReason)
	}
	if chall.Scheduled != chall.Sent+chall.Overflow {
		t.Errorf("scheduled %d != sent %d + overflow %d", chall.Scheduled, chall.Sent, chall.Overflow)
	}
	// Sent at the latest timeout_ms past the slice's end, answered within a timeout of that.
	if chall.LatencyUs.Max > 1_000_000 {
		t.Errorf("challenger max latency %d µs: a request was sent more than timeout_ms past its slice's end", chall.LatencyUs.Max)
	}
}

// A run whose last requests time out after its schedule's end ends when they do: the lane
// expiring them must not then wait for an event that nothing will send (it did, for ever,
// and so did priming against a target that never answers).
func TestARunWhoseLastRequestsTimeOutEnds(t *testing.T) {
	var n atomic.Int64
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 4 {
			return // the priming requests, one per connection
		}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(hung.Close)
	p := mustPlan(t, planJSON(hung.URL, hung.URL,
		`"rate":20,"slice_seconds":0.5,"pairs":1,"seed":1,"connections":2,"slice_warmup_ms":0,"timeout_ms":300,"requests":[{"path":"/"}]`))
	res := runEndsWithin(t, p, 2500*time.Millisecond)
	if len(res.Slices) != 2 {
		t.Fatalf("%d slices, want the pair's 2", len(res.Slices))
	}
	for _, s := range res.Slices {
		if s.Errors.Timeout == 0 || s.Errors.Timeout != s.Completed {
			t.Errorf("slice %d: completed %d, errors %+v; want every request timed out", s.Index, s.Completed, s.Errors)
		}
	}
}

// The same over HTTP/2 streams (h2c): the queued requests are dropped and the calls in flight
// left behind, with 100 streams of a service taking a second each still open.
func TestCancelEndsAnH2CRunPromptlyWhenTheServiceIsFarBehind(t *testing.T) {
	slow := startH2C(t, time.Second) // 1 connection × 100 streams / 1 s = 100 req/s
	p := mustPlan(t, planJSON(slow.url, slow.url,
		`"protocol":"h2c","rate":5000,"slice_seconds":1,"pairs":2,"seed":1,"connections":1,"slice_warmup_ms":0,"timeout_ms":10000,"requests":[{"path":"/"}]`))
	res := abortAfter(t, p, 2500*time.Millisecond)
	if !res.Partial || len(res.Slices) == 0 || res.Slices[len(res.Slices)-1].Valid {
		t.Errorf("partial=%v, slices %+v", res.Partial, res.Slices)
	}
}
