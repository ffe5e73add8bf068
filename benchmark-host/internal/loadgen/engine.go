// Package loadgen runs one interleaved, open-loop, constant-rate experiment against two
// targets. Every request has an intended send time on a single absolute schedule
// t_k = T0 + k/rate; latency is measured from that time (coordinated-omission free).
package loadgen

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// Generator names this tool in results.
const Generator = "perf-gate-loadgen"

// scheduleLead is how far in the future T0 is set, so the first request is not already late.
const scheduleLead = 20 * time.Millisecond

type runner struct {
	plan       *plan.Plan
	order      []string
	clock      monoClock
	queues     map[string]*jobQueue
	workers    map[string][]*worker
	slices     []*sliceAcc
	warmupEnd  time.Duration // offset of the first measured slice
	sliceDur   time.Duration
	sliceWarm  time.Duration
	end        time.Duration
	dispatched chan struct{} // closed when the dispatcher returns
	timeout    time.Duration
	t0         time.Duration // offset of the schedule's first request on clock

	warmSent, warmOK, warmErr, warmOverflow atomic.Int64

	observer   SliceObserver
	boundaries []chan struct{} // closed once the observer has seen boundary i
}

// SliceObserver is told when each slice starts and ends on the schedule, from a goroutine of
// its own (never the dispatcher's thread), and completes each slice's record before it is
// reported. perf-host uses it to read what the arms consumed per slice (issue 19).
type SliceObserver interface {
	// Boundary is called as close as the Go timer allows to the start of slice i (i == the
	// number of slices: the end of the last), or at once when the run stops early.
	Boundary(i int)
	// Complete adds the observer's fields to slice s once its end boundary has been seen; it
	// may mark the slice invalid.
	Complete(s *contract.Slice)
}

// Option changes how Run runs.
type Option func(*runner)

// WithSliceObserver has o observe every slice boundary and complete every slice.
func WithSliceObserver(o SliceObserver) Option { return func(r *runner) { r.observer = o } }

// Run executes the plan. Cancelling ctx ends the run early: slices already finished are
// kept, the one in progress is marked invalid, and the result is marked partial.
func Run(ctx context.Context, p *plan.Plan, progress io.Writer, opts ...Option) (*contract.Result, error) {
	if progress == nil {
		progress = io.Discard
	}
	r := &runner{
		plan:       p,
		order:      p.SliceOrder(),
		queues:     map[string]*jobQueue{},
		workers:    map[string][]*worker{},
		sliceDur:   time.Duration(p.SliceSeconds * float64(time.Second)),
		sliceWarm:  time.Duration(*p.SliceWarmupMs) * time.Millisecond,
		dispatched: make(chan struct{}),
		timeout:    time.Duration(p.TimeoutMs) * time.Millisecond,
		clock:      newMonoClock(),
	}
	for _, o := range opts {
		o(r)
	}
	factory := newRequestFactory(p)
	for _, arm := range []string{contract.Champion, contract.Challenger} {
		q, err := newJobQueue(p.MaxQueue)
		if err != nil {
			return nil, err
		}
		defer q.release()
		r.queues[arm] = q
		for range p.Connections {
			r.workers[arm] = append(r.workers[arm], newWorker(arm, factory, r.timeout))
		}
	}
	stopWatchdog := r.watchdog()
	defer stopWatchdog()
	if err := r.prime(); err != nil {
		return nil, err
	}

	started := time.Now()
	r.t0 = r.clock.since(started) + scheduleLead
	r.warmupEnd = r.t0 + time.Duration(p.WarmupSeconds*float64(time.Second))
	r.end = r.warmupEnd + time.Duration(len(r.order))*r.sliceDur
	for i, arm := range r.order {
		start := r.clock.at(r.warmupEnd + time.Duration(i)*r.sliceDur)
		r.slices = append(r.slices, newSliceAcc(i, arm, r.queues[arm], start, start.Add(r.sliceDur)))
	}
	for range len(r.order) + 1 {
		r.boundaries = append(r.boundaries, make(chan struct{}))
	}

	if r.observer != nil {
		go r.observe(ctx)
	}
	workersDone := r.goEachWorker(func(arm string, _ int, w *worker) { r.serve(w, r.queues[arm]) })
	slicesOut := make(chan []contract.Slice, 1)
	go func() { slicesOut <- r.report(progress) }()

	r.dispatch(ctx)
	for _, q := range r.queues {
		q.close(p.Connections)
	}
	workersDone()
	slices := <-slicesOut

	res := &contract.Result{
		SchemaVersion: contract.SchemaVersion,
		Generator:     Generator,
		Plan:          p.Plan,
		Seed:          *p.Seed,
		Order:         r.order,
		Host:          hostinfo.Read(),
		Started:       started,
		Ended:         time.Now(),
		Warmup: contract.Warmup{
			Seconds: p.WarmupSeconds, Sent: r.warmSent.Load(), OK: r.warmOK.Load(),
			Errors: r.warmErr.Load(), Overflow: r.warmOverflow.Load(),
		},
		Slices: slices,
	}
	if len(slices) < len(r.order) || (len(slices) > 0 && !slices[len(slices)-1].Valid && r.slices[len(slices)-1].interrupted) {
		res.Partial = true
		res.PartialReason = fmt.Sprintf("stopped after %d of %d slices: %v", len(slices), len(r.order), context.Cause(ctx))
	}
	return res, nil
}

// observe calls the observer at every slice boundary on the schedule; when the run stops
// early it calls it at once for the boundary it was waiting for and releases the rest.
func (r *runner) observe(ctx context.Context) {
	stopped := false
	for i := range r.boundaries {
		if !stopped {
			t := time.NewTimer(time.Until(r.clock.at(r.warmupEnd + time.Duration(i)*r.sliceDur)))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				stopped = true
			}
			r.observer.Boundary(i)
		}
		close(r.boundaries[i])
	}
}

// prime opens every connection before the schedule starts (so the first slice pays no
// handshakes) and proves both targets reachable.
func (r *runner) prime() error {
	errs := make(chan error, 2*r.plan.Connections)
	r.goEachWorker(func(arm string, i int, w *worker) {
		o := w.do(&job{seq: ^uint64(i), intended: time.Now(), slice: -1}, &r.clock, r.timeout)
		if o.errClass != errNone {
			errs <- fmt.Errorf("plan: targets.%s: %s is unreachable (%s)", arm, r.plan.Target(arm), o.errClass)
		}
	})()
	close(errs)
	return <-errs
}

// goEachWorker runs fn for every worker in a goroutine of its own; the returned function
// waits until all of them have returned.
func (r *runner) goEachWorker(fn func(arm string, i int, w *worker)) (wait func()) {
	var wg sync.WaitGroup
	for arm, ws := range r.workers {
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(arm, i, w)
			}()
		}
	}
	return wg.Wait
}

func (c errClass) String() string {
	return [...]string{"ok", "connection refused or failed", "timed out", "request failed"}[c]
}

// dispatch walks the schedule on a locked OS thread. It never blocks on a worker: a full
// queue is counted as overflow and invalidates the slice instead of stalling the schedule.
func (r *runner) dispatch(ctx context.Context) {
	defer close(r.dispatched)
	// The thread stays locked until it exits, so its changed timer slack dies with it.
	pinDispatcherThread()
	period := float64(time.Second) / r.plan.Rate
	cur := 0 // the first slice whose dispatched channel is still open
	for k := uint64(0); ; k++ {
		off := r.t0 + time.Duration(float64(k)*period)
		if off >= r.end {
			break
		}
		r.clock.sleepUntil(off)
		select {
		case <-ctx.Done():
			r.interrupt(cur, off)
			return
		default:
		}
		j := job{seq: k, intended: r.clock.at(off), slice: -1}
		if off < r.warmupEnd {
			// Warmup alternates request by request, so both arms warm up together.
			if r.queues[r.order[k%2]].push(j) {
				r.warmSent.Add(1)
			} else {
				r.warmOverflow.Add(1)
			}
			continue
		}
		s := int((off - r.warmupEnd) / r.sliceDur)
		for ; cur < s; cur++ {
			close(r.slices[cur].dispatched)
		}
		acc := r.slices[s]
		j.slice, j.acc = s, acc
		j.record = off-r.warmupEnd-time.Duration(s)*r.sliceDur >= r.sliceWarm
		acc.scheduled++
		acc.pending.Add(1)
		if !acc.queue.push(j) {
			acc.overflow++
			acc.pending.Done()
		}
	}
	for ; cur < len(r.slices); cur++ {
		close(r.slices[cur].dispatched)
	}
}

// interrupt marks the slice in progress at offset off as cut short.
func (r *runner) interrupt(cur int, off time.Duration) {
	if off < r.warmupEnd || cur >= len(r.slices) {
		return
	}
	acc := r.slices[cur]
	acc.interrupted = true
	acc.stoppedAt = r.clock.at(off)
	close(acc.dispatched)
}

// watchdogPeriod bounds how late a timeout fires; one shared ticker instead of a timer per
// request keeps the network poller asleep between requests.
const watchdogPeriod = 5 * time.Millisecond

// watchdog expires overdue requests until the returned stop function is called.
func (r *runner) watchdog() (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(watchdogPeriod)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				at := r.clock.since(now)
				for _, ws := range r.workers {
					for _, w := range ws {
						w.expire(at)
					}
				}
			}
		}
	}()
	return func() { close(done) }
}

func (r *runner) serve(w *worker, q *jobQueue) {
	for {
		j, ok := q.pop()
		if !ok {
			return
		}
		o := w.do(&j, &r.clock, r.timeout)
		if j.acc == nil {
			if o.errClass == errNone && o.status < 400 {
				r.warmOK.Add(1)
			} else {
				r.warmErr.Add(1)
			}
			continue
		}
		j.acc.add(&o)
		j.acc.pending.Done()
	}
}

// report finalises slices in order as each one's requests have all completed, printing one
// progress line per slice.
func (r *runner) report(progress io.Writer) []contract.Slice {
	out := make([]contract.Slice, 0, len(r.slices))
	for i, acc := range r.slices {
		select {
		case <-acc.dispatched:
		case <-r.dispatched:
			select {
			case <-acc.dispatched:
			default:
				return out // the run stopped before this slice began
			}
		}
		acc.pending.Wait()
		s := acc.snapshot(i / 2)
		if r.observer != nil {
			<-r.boundaries[i+1]
			r.observer.Complete(&s)
		}
		fmt.Fprintln(progress, progressLine(&s, len(r.slices)))
		out = append(out, s)
		if acc.interrupted {
			return out
		}
	}
	return out
}
