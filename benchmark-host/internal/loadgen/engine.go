// Package loadgen runs one interleaved, open-loop, constant-rate experiment against two
// targets. Every request has an intended send time on a single absolute schedule
// t_k = T0 + k/rate; latency is measured from that time (coordinated-omission free).
package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
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

// SliceObserver is told when each slice starts and ends on the schedule, from a goroutine of
// its own (never a lane's), and completes each slice's record before it is reported. perf-host
// uses it to read what the arms consumed per slice (docs/design/0017-host-faults.md).
type SliceObserver interface {
	// Boundary is called as close as the Go timer allows to the start of slice i (i == the
	// number of slices: the end of the last), or at once when the run stops early.
	Boundary(i int)
	// Complete adds the observer's fields to slice s once its end boundary has been seen; it
	// may mark the slice invalid.
	Complete(s *contract.Slice)
}

// Option changes how Run runs.
type Option func(*options)

type options struct {
	observer   SliceObserver
	openDevice DeviceOpener
}

// WithSliceObserver has o observe every slice boundary and complete every slice.
func WithSliceObserver(o SliceObserver) Option { return func(c *options) { c.observer = o } }

// Run executes the plan. Cancelling ctx ends the run early, at once: the requests still
// queued or in flight are abandoned (their connections closed), slices already finished are
// kept, the first one not finished (in progress, or with requests still out) is marked
// interrupted and invalid, and the result is marked partial.
func Run(ctx context.Context, p *plan.Plan, progress io.Writer, opts ...Option) (*contract.Result, error) {
	if progress == nil {
		progress = io.Discard
	}
	o := applyOptions(opts)
	release, cpuIdle := holdCPUsAwake(o.openDevice)
	generatorSlice, restoreSlice := shortenGeneratorSlice()
	defer restoreSlice()
	defer release()
	targets, err := resolveTargets(ctx, p)
	if err != nil {
		return nil, err
	}
	defer raiseGOMAXPROCS(p.GeneratorCPUs)()

	order := p.SliceOrder()
	clock := newMonoClock()
	var stop atomic.Int64
	published := make(chan *sliceShard, p.GeneratorCPUs*(len(order)+1))
	lanes, err := newLanes(ctx, p, targets, clock, &stop, published)
	if err != nil {
		return nil, err
	}
	crew := launchLanes(lanes)
	if err := crew.primed(targets); err != nil {
		crew.abandon()
		return nil, err
	}

	started := time.Now()
	sched := newSchedule(p, clock, order, clock.since(started)+scheduleLead)
	var obs *boundaryWatch
	if o.observer != nil {
		obs = watchBoundaries(ctx, sched, o.observer)
	}
	crew.begin(sched)
	finished := stopOnCancel(ctx, clock, &stop, lanes)
	rep := reporter{sched: sched, lanes: p.GeneratorCPUs, published: published, observer: obs}
	slices := rep.collect(order, progress)
	close(finished)
	crew.wait()
	if obs != nil {
		// The observer is done with every boundary before Run returns, even in a run
		// stopped before its first slice.
		<-obs.boundaries[len(obs.boundaries)-1]
	}

	res := newResult(ctx, p, order, started, slices, lanes, rep.interrupted)
	res.Host.CPUIdle = cpuIdle
	res.Host.GeneratorSlice = generatorSlice
	return res, nil
}

func applyOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// resolveTargets resolves both arms' targets, in the order of armNames.
func resolveTargets(ctx context.Context, p *plan.Plan) ([2]endpoint, error) {
	var targets [2]endpoint
	for arm, name := range armNames {
		e, err := resolveEndpoint(ctx, name, p.Target(name))
		if err != nil {
			return targets, err
		}
		targets[arm] = e
	}
	return targets, nil
}

// laneCrew is the lanes' goroutines: each primes its connections on its own thread, then
// waits for the schedule, runs it, and releases what it holds.
type laneCrew struct {
	lanes  []runLane
	ready  chan runLane
	start  chan *schedule
	exited chan struct{}
}

func launchLanes(lanes []runLane) *laneCrew {
	n := len(lanes)
	c := &laneCrew{lanes: lanes, ready: make(chan runLane, n), start: make(chan *schedule, n), exited: make(chan struct{}, n)}
	for _, l := range lanes {
		go func() {
			defer func() { l.release(); c.exited <- struct{}{} }()
			setTimerSlack()
			l.prime()
			c.ready <- l
			if s := <-c.start; s != nil {
				l.run(s)
			}
		}()
	}
	return c
}

// primed waits until every lane has primed its connections; the error names the first
// target a lane could not reach.
func (c *laneCrew) primed(targets [2]endpoint) error {
	var unreachable error
	for range c.lanes {
		w := (<-c.ready).base()
		for arm, class := range w.primeErr {
			if class != errNone && unreachable == nil {
				unreachable = fmt.Errorf("plan: targets.%s: %s is unreachable (%s)", armNames[arm], targets[arm].url, class)
			}
		}
	}
	return unreachable
}

// begin hands every lane the schedule.
func (c *laneCrew) begin(s *schedule) {
	for range c.lanes {
		c.start <- s
	}
}

// abandon sends the primed lanes home without a schedule.
func (c *laneCrew) abandon() {
	close(c.start)
	c.wait()
}

// wait returns when every lane has released what it holds.
func (c *laneCrew) wait() {
	for range c.lanes {
		<-c.exited
	}
}

// stopOnCancel stops the schedule where it is when ctx ends, and wakes the lanes to see it,
// until finished is closed.
func stopOnCancel(ctx context.Context, clock monoClock, stop *atomic.Int64, lanes []runLane) (finished chan struct{}) {
	finished = make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(int64(max(1, clock.since(time.Now()))))
			for _, l := range lanes {
				signalEventfd(l.wakeFd())
			}
		case <-finished:
		}
	}()
	return finished
}

// newResult is the run's result document, its warm-up counts summed over the lanes; a run
// stopped early, or interrupted in a slice, is partial.
func newResult(ctx context.Context, p *plan.Plan, order []string, started time.Time, slices []contract.Slice, lanes []runLane, interrupted bool) *contract.Result {
	res := &contract.Result{
		SchemaVersion: contract.SchemaVersion,
		Generator:     Generator,
		Plan:          p.Plan,
		Seed:          *p.Seed,
		Order:         order,
		Host:          hostinfo.Read(),
		Started:       started,
		// On the monotonic clock from the start: a wall clock stepped back mid-run (NTP, a VM
		// resumed) would end the run before it began, as the slices' times never do.
		Ended:  started.Add(time.Since(started)),
		Warmup: contract.Warmup{Seconds: p.WarmupSeconds},
		Slices: slices,
	}
	for _, l := range lanes {
		l := l.base()
		res.Warmup.Sent += l.warm.sent
		res.Warmup.OK += l.warm.ok
		res.Warmup.Errors += l.warm.errs
		res.Warmup.Overflow += l.warm.overflow
	}
	if len(slices) < len(order) || interrupted {
		res.Partial = true
		res.PartialReason = fmt.Sprintf("stopped after %d of %d slices: %v", len(slices), len(order), context.Cause(ctx))
	}
	return res
}

// runLane is one lane of either carrier.
type runLane interface {
	prime()
	run(*schedule)
	release()
	base() *walk
	wakeFd() int
}

// newLanes makes the plan's generator_cpus lanes, each with its share of the connections
// and of the queue, speaking the plan's protocol.
func newLanes(ctx context.Context, p *plan.Plan, targets [2]endpoint, clock monoClock, stop *atomic.Int64,
	published chan<- *sliceShard) ([]runLane, error) {
	n := p.GeneratorCPUs
	timeout := time.Duration(p.TimeoutMs) * time.Millisecond
	queue := int(math.Ceil(float64(p.MaxQueue) / float64(n)))
	var make1 func(i int) (runLane, error)
	switch p.Protocol {
	case contract.ProtocolGRPC:
		calls, err := newCallWriter(ctx, p, targets)
		if err != nil {
			return nil, err
		}
		make1 = func(i int) (runLane, error) {
			return newStreamLane(i, n, dialGRPC(calls, timeout), targets, clock, p.Connections, queue, stop, published)
		}
	case contract.ProtocolH2C:
		reqs := newH2CRequests(p, targets)
		make1 = func(i int) (runLane, error) {
			return newStreamLane(i, n, dialH2C(reqs, timeout), targets, clock, p.Connections, queue, stop, published)
		}
	case contract.ProtocolHTTP1:
		writer := newRequestWriter(p, targets)
		make1 = func(i int) (runLane, error) {
			return newLane(i, n, writer, targets, timeout, clock, p.Connections, queue, stop, published)
		}
	default:
		return nil, fmt.Errorf("plan: protocol: %q is not supported by this load generator", p.Protocol)
	}
	lanes := make([]runLane, n)
	for i := range lanes {
		l, err := make1(i)
		if err != nil {
			for _, l := range lanes[:i] {
				l.release()
			}
			return nil, err
		}
		lanes[i] = l
	}
	return lanes, nil
}

// raiseGOMAXPROCS gives each lane a P of its own for the run: a lane blocked in a raw
// epoll_pwait2 keeps its P, so without spare ones the rest of the process (the reporter,
// perf-host's executor, the GC) would wait for the lanes. The returned function restores it.
func raiseGOMAXPROCS(lanes int) (restore func()) {
	before := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(before + lanes)
	return func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.SetDefaultGOMAXPROCS()
		} else {
			runtime.GOMAXPROCS(before)
		}
	}
}

// boundaryWatch calls a SliceObserver at every slice boundary of the schedule, on a timer
// goroutine of its own: the lanes never wait for it, and it adds nothing per request.
type boundaryWatch struct {
	SliceObserver
	boundaries []chan struct{} // closed once the observer has seen boundary i
}

// watchBoundaries starts calling o at sched's slice boundaries (the offsets at which the
// lanes cross from one slice's shards to the next); when ctx ends the run early it calls o at
// once for the boundary it was waiting for and releases the rest.
func watchBoundaries(ctx context.Context, sched *schedule, o SliceObserver) *boundaryWatch {
	w := &boundaryWatch{SliceObserver: o, boundaries: make([]chan struct{}, len(sched.order)+1)}
	for i := range w.boundaries {
		w.boundaries[i] = make(chan struct{})
	}
	go func() {
		stopped := false
		for i, seen := range w.boundaries {
			if !stopped {
				t := time.NewTimer(time.Until(sched.clock.at(sched.sliceStart(i))))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					stopped = true
				}
				o.Boundary(i)
			}
			close(seen)
		}
	}()
	return w
}

// reporter merges the lanes' shards of each slice, in slice order, as they are published.
type reporter struct {
	sched       *schedule
	lanes       int
	published   <-chan *sliceShard
	observer    *boundaryWatch // nil without a SliceObserver
	interrupted bool
}

// collect returns the slices the run reached, printing one progress line per slice; it
// returns once every lane has exited.
func (r *reporter) collect(order []string, progress io.Writer) []contract.Slice {
	got := make([][]*sliceShard, len(order))
	exited := 0
	out := make([]contract.Slice, 0, len(order))
	for i := range order {
		for len(got[i]) < r.lanes && exited < r.lanes {
			sh := <-r.published
			if sh.slice < 0 {
				exited++
				continue
			}
			got[sh.slice] = append(got[sh.slice], sh)
		}
		if len(got[i]) == 0 {
			break // the run stopped before this slice began
		}
		interrupted := len(got[i]) < r.lanes
		for _, sh := range got[i] {
			interrupted = interrupted || sh.abandoned || (sh.interruptedAt != 0 && sh.interruptedAt < sh.end)
		}
		s := mergeShards(got[i]).snapshot(r.sched.clock, order[i], pairOf(i), interrupted)
		got[i] = nil
		if r.observer != nil {
			<-r.observer.boundaries[i+1]
			r.observer.Complete(&s)
		}
		fmt.Fprintln(progress, progressLine(&s, len(order)))
		out = append(out, s)
		if interrupted {
			r.interrupted = true
			break
		}
	}
	for exited < r.lanes {
		if sh := <-r.published; sh.slice < 0 {
			exited++
		}
	}
	return out
}
