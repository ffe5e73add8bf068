package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// walk is what every kind of lane shares: its part of the one schedule (the requests
// k ≡ index mod count), the slice boundaries it crosses, its per-slice shards and the
// accounting of each finished request. What puts a request on the wire is the lane's
// carrier: the HTTP/1.1 event loop, or the HTTP/2 streams of h2c and gRPC
// (docs/design/0015-grpc-and-h2c.md).
type walk struct {
	index, count int
	clock        monoClock
	sched        *schedule // nil while priming
	carrier      carrier

	nextK        uint64
	nextBoundary int           // index of the next slice boundary to cross (len(order)+1: none)
	inflight     int           // requests queued or in flight
	stop         *atomic.Int64 // offset at which the run was stopped; 0 while it runs
	frontier     time.Duration // where the lane stopped dispatching
	done         bool          // the lane's schedule is over (ended or stopped)

	shards    []*sliceShard
	published chan<- *sliceShard
	warm      warmCounts
	primeErr  [2]errClass
	// dispatching is the request being dispatched: a field, not a local, because a carrier
	// takes it by pointer through an interface, which would move a local to the heap per request.
	dispatching job
}

// carrier puts a lane's requests on the wire.
type carrier interface {
	// submit starts j now, or queues it when every connection (or stream) of its arm is
	// busy; false when the queue is full too (an overflow). It copies *j and keeps no pointer to it.
	submit(j *job) bool
	// poll waits for the next due request (wakeAt), a deadline or an event that needs an
	// answer, and handles what came; every finished request goes to finish.
	poll(now time.Duration)
	// abandon drops every queued request and gives up on those on the wire (their
	// connections closed, or their calls cancelled when the lane releases its connections),
	// accounting none of them: the run was stopped.
	abandon()
}

type warmCounts struct{ sent, ok, errs, overflow int64 }

// finish accounts one finished request of arm: in its slice's shard, as a priming failure,
// or in the warm-up counts.
func (l *walk) finish(j *job, o *outcome, arm int) {
	l.inflight--
	switch {
	case j.shard != nil:
		j.shard.add(o)
		j.shard.open--
		l.maybePublish(j.shard)
	case j.slice == primeSlice:
		// Any answer proves the target reachable, a gRPC status too.
		if o.errClass != errNone && o.errClass != errGRPC && l.primeErr[arm] == errNone {
			l.primeErr[arm] = o.errClass
		}
	case o.ok():
		l.warm.ok++
	default:
		l.warm.errs++
	}
}

// job is one request on the schedule.
type job struct {
	seq      uint64
	draw     uint64 // what its random choices are drawn from (schedule.draw)
	intended time.Duration
	// When the lane got to it: later than intended only when the generator fell behind.
	dispatched time.Duration
	slice      int // -1 during warmup, primeSlice while priming
	arm        int
	record     bool
	shard      *sliceShard // nil outside measured slices
}

const primeSlice = -2

// entry is the workload entry job j sends: drawn by weight from its draw.
func (j *job) entry(p *plan.Plan, seed uint64) int { return p.Pick(plan.Uniform(seed, j.draw)) }

// vars are the values job j's templates expand with.
func (j *job) vars(seed uint64, run, arm string) plan.Vars {
	return plan.Vars{Seed: seed, Seq: j.seq, Draw: j.draw, Run: run, Arm: arm, Slice: max(j.slice, -1)}
}

// run walks the lane's part of the schedule until it ends, then lets every request in flight
// finish, and publishes its shards and a final summary. When the run is stopped it stops
// dispatching at once and abandons what is queued or in flight, whatever slice it belongs to:
// a service far slower than the rate would otherwise hold the stopped run for as long as it
// takes to answer them all.
func (l *walk) run(s *schedule) {
	l.sched = s
	l.nextK = uint64(l.index)
	yielded := l.now()
	for {
		now := l.now()
		l.advance(now)
		if l.done && l.inflight > 0 && l.stop.Load() != 0 {
			l.abandon()
		}
		if l.done && l.inflight == 0 {
			break
		}
		if now-yielded >= yieldEvery {
			yielded = now
			yieldToScheduler()
		}
		l.carrier.poll(now)
	}
	for _, sh := range l.shards {
		l.publish(sh)
	}
	l.published <- &sliceShard{slice: -1, lane: l.index, interruptedAt: l.frontier}
}

func (l *walk) now() time.Duration { return time.Since(l.clock.base) }

// advance sends every request due by now and crosses the slice boundaries passed.
func (l *walk) advance(now time.Duration) {
	s := l.sched
	for !l.done {
		off := s.at(l.nextK)
		boundary := s.sliceStart(l.nextBoundary)
		if l.stop.Load() != 0 {
			// Where the lane is, not where the stop was: a lane behind its schedule sends
			// nothing more of it.
			l.halt(min(off, boundary), now)
			return
		}
		if boundary <= off && l.nextBoundary <= len(s.order) {
			if boundary > now {
				return
			}
			l.cross(now)
			continue
		}
		if off > now {
			return
		}
		if off >= s.end {
			l.halt(s.end, now)
			return
		}
		l.dispatch(l.nextK, off, now)
		l.nextK += uint64(l.count)
	}
}

// cross enters the next slice (the last boundary is the schedule's end): the one before it
// is passed, and both are stamped with the process CPU clock.
func (l *walk) cross(now time.Duration) {
	cpu := processCPU()
	i := l.nextBoundary
	l.nextBoundary++
	if i > 0 {
		prev := l.shards[i-1]
		prev.cpuOut, prev.wallOut, prev.passed = cpu, now, true
		l.maybePublish(prev)
	}
	if i < len(l.sched.order) {
		end := l.sched.sliceStart(i + 1)
		sh := &sliceShard{slice: i, lane: l.index, start: l.sched.sliceStart(i),
			end: end, lastSend: end + l.sched.overrun, cpuIn: cpu, wallIn: now, known: true}
		if l.sched.classes > 0 {
			sh.classes = make([]tally, l.sched.classes)
		}
		l.shards = append(l.shards, sh)
	}
}

// halt ends the lane's schedule at off: the schedule's end, or where the run was stopped.
func (l *walk) halt(off, now time.Duration) {
	l.done, l.frontier = true, off
	cpu := processCPU()
	for _, sh := range l.shards {
		if !sh.passed {
			sh.interruptedAt, sh.cpuOut, sh.wallOut, sh.passed = off, cpu, now, true
			l.maybePublish(sh)
		}
	}
}

// dispatch puts request k on the wire, or in its arm's queue when every connection of the
// arm is busy, or counts it as an overflow when the queue is full too. now is when the lane
// got to it: how late that is, is the generator's own lag.
func (l *walk) dispatch(k uint64, off, now time.Duration) {
	s := l.sched
	l.dispatching = job{seq: k, intended: off, dispatched: now, slice: s.sliceOf(off)}
	j := &l.dispatching
	j.draw = s.draw(k, j.slice)
	if j.slice < 0 {
		// Warmup alternates request by request, so both arms warm up together.
		j.arm = s.order[k%2]
		if now > s.warmupLastSend || !l.carrier.submit(j) {
			l.warm.overflow++
			return
		}
		l.warm.sent++
		return
	}
	j.shard = l.shards[j.slice]
	j.arm = s.order[j.slice]
	j.record = off-j.shard.start >= s.sliceWarm
	j.shard.scheduled++
	if now > j.shard.lastSend || !l.carrier.submit(j) {
		j.shard.overflow++
		return
	}
	j.shard.open++
}

// dequeue is the next request of a queue that may still leave at now (schedule.overrun): the
// ones before it that may not, never sent, are overflows. A service far slower than the rate
// thus gets a slice's queued requests for at most timeout_ms past the slice's end, not all of
// them one after the other for as long as it takes.
func (l *walk) dequeue(q *jobRing, now time.Duration) (job, bool) {
	for {
		j, ok := q.pop()
		if !ok || l.sched == nil {
			return j, ok
		}
		last := l.sched.warmupLastSend
		if j.shard != nil {
			last = j.shard.lastSend
		}
		if now <= last {
			return j, true
		}
		l.inflight--
		if j.shard == nil {
			l.warm.sent--
			l.warm.overflow++
			continue
		}
		j.shard.overflow++
		j.shard.open--
		l.maybePublish(j.shard)
	}
}

// abandon gives up on every request queued or in flight (the run was stopped): none is
// accounted, and each slice that had one is marked so, to be reported as interrupted.
func (l *walk) abandon() {
	l.carrier.abandon()
	l.inflight = 0
	for _, sh := range l.shards {
		if sh.open > 0 {
			sh.open, sh.abandoned = 0, true
		}
	}
}

func (l *walk) maybePublish(sh *sliceShard) {
	if sh.passed && sh.open == 0 {
		l.publish(sh)
	}
}

func (l *walk) publish(sh *sliceShard) {
	if !sh.published {
		sh.published = true
		l.published <- sh
	}
}

// jobRing is a fixed-capacity FIFO of requests waiting for a connection.
type jobRing struct {
	buf        []job
	head, size int
}

func newJobRing(capacity int) jobRing { return jobRing{buf: make([]job, capacity)} }

func (r *jobRing) push(j *job) bool {
	if r.size == len(r.buf) {
		return false
	}
	r.buf[(r.head+r.size)%len(r.buf)] = *j
	r.size++
	return true
}

// clear empties the ring.
func (r *jobRing) clear() { r.head, r.size = 0, 0 }

func (r *jobRing) pop() (job, bool) {
	if r.size == 0 {
		return job{}, false
	}
	j := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return j, true
}

// wakeAt is when the lane next wakes to send: the next request's due time, or, when more
// requests fall due within the plan's send window of it, the last of those, so that one
// wake-up sends them all. A request never leaves early, and a batched one at most the
// window late.
func (l *walk) wakeAt() time.Duration {
	s, step := l.sched, uint64(l.count)
	first := s.at(l.nextK)
	last := first + s.window
	// The last request due within the window, computed rather than walked to (a 1 ms window at
	// a high rate holds many), then mended for the schedule's rounding to whole nanoseconds.
	k := l.nextK + step*uint64(float64(s.window)/(s.period*float64(l.count)))
	for k > l.nextK && s.at(k) > last {
		k -= step
	}
	for s.at(k+step) <= last {
		k += step
	}
	return s.at(k)
}
