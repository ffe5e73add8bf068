package loadgen

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// streamsPerConn bounds the requests in flight on one HTTP/2 connection: the common default of
// SETTINGS_MAX_CONCURRENT_STREAMS (grpc-go's, Go's and most servers'), so that a request never
// waits inside the client library, unseen, for a stream. Beyond connections × streamsPerConn
// requests of an arm wait in the lane's queue (max_queue), as HTTP/1.1 requests wait for a
// connection.
const streamsPerConn = 100

// streamConn is one HTTP/2 connection of a stream lane: a grpc-go ClientConn (protocol grpc)
// or a Go HTTP/2 transport without TLS (h2c).
type streamConn interface {
	// do makes j's request and fills o: sent (on the run's clock) just before the client
	// library writes it, done when the answer or the failure is in, its status or error class.
	do(j *job, o *outcome, now func() time.Duration)
	close()
}

// dialStream opens the connection of an arm; dial is the counted TCP dialer it must use.
type dialStream func(arm int, addr string, dial func(context.Context, string) (net.Conn, error)) (streamConn, error)

// streamLane is a lane whose carrier is HTTP/2 streams (docs/design/0015-grpc-and-h2c.md): unary
// gRPC calls or h2c requests over the lane's share of HTTP/2 connections per target, each carrying
// concurrent streams. It walks the same schedule with the same shards as the HTTP/1.1 event loop;
// only what puts a request on the wire differs. The client libraries block per request, so each
// runs on a goroutine of its own, stamps its own send and completion times on the run's clock and
// hands the outcome back to the lane, which accounts it on its own goroutine: the shards stay
// lock-free.
type streamLane struct {
	walk
	conns   [2][]streamConn
	next    [2]int // round robin over the arm's connections
	streams [2]int // requests in flight per arm
	limit   int    // requests in flight per arm before queueing
	pending [2]jobRing
	dials   [2]atomic.Int64 // connections opened, per arm
	seen    [2]int64        // dials already counted as new_connections

	ep, wake int
	events   []syscall.EpollEvent
	// The lane is woken for finished requests only when it needs them promptly (queued
	// requests, priming, the end of the run); otherwise it takes them at its next due send,
	// as the HTTP/1.1 loop does, since each carries its own completion time.
	needWake atomic.Bool
	mu       sync.Mutex
	finished []finishedCall
	spare    []finishedCall
}

type finishedCall struct {
	j   job
	arm int
	o   outcome
}

func newStreamLane(index, count int, dial dialStream, targets [2]endpoint, clock monoClock,
	connsPerArm, queuePerArm int, stop *atomic.Int64, published chan<- *sliceShard) (*streamLane, error) {
	l := &streamLane{walk: walk{index: index, count: count, clock: clock, stop: stop, published: published}, ep: -1, wake: -1}
	l.carrier = l
	var err error
	if l.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if l.wake, err = newEventfd(); err != nil {
		l.release()
		return nil, err
	}
	if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, l.wake, &syscall.EpollEvent{Events: epollIn, Fd: wakeID}); err != nil {
		l.release()
		return nil, err
	}
	l.events = make([]syscall.EpollEvent, 4)
	for arm := range 2 {
		for i := index; i < connsPerArm; i += count {
			c, err := dial(arm, targets[arm].hostPort(), l.dialer(arm))
			if err != nil {
				l.release()
				return nil, err
			}
			l.conns[arm] = append(l.conns[arm], c)
		}
		l.pending[arm] = newJobRing(queuePerArm)
	}
	l.limit = len(l.conns[0]) * streamsPerConn
	return l, nil
}

// dialer opens the arm's connections, counting each (new_connections).
func (l *streamLane) dialer(arm int) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			l.dials[arm].Add(1)
		}
		return c, err
	}
}

func (l *streamLane) release() {
	for _, arm := range l.conns {
		for _, c := range arm {
			c.close()
		}
	}
	for _, fd := range []int{l.ep, l.wake} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

func (l *streamLane) base() *walk { return &l.walk }
func (l *streamLane) wakeFd() int { return l.wake }

// prime makes one request on each connection before the schedule starts, so the first slice
// pays no handshakes and both targets are proven to answer the workload's first request.
func (l *streamLane) prime() {
	for arm := range 2 {
		for i := range l.conns[arm] {
			j := job{seq: ^uint64(i), draw: ^uint64(i), slice: primeSlice, arm: arm}
			l.inflight++
			l.start(&j, i)
		}
	}
	for l.inflight > 0 {
		l.poll(l.now())
	}
	for arm := range 2 {
		l.seen[arm] = l.dials[arm].Load()
	}
}

func (l *streamLane) submit(j *job) bool {
	if l.streams[j.arm] < l.limit {
		l.inflight++
		l.start(j, -1)
		return true
	}
	if l.pending[j.arm].push(j) {
		l.inflight++
		return true
	}
	return false
}

// start makes the request of j on connection conn of its arm (-1: the next in turn).
func (l *streamLane) start(j *job, conn int) {
	arm := j.arm
	if conn < 0 {
		conn = l.next[arm]
		l.next[arm] = (conn + 1) % len(l.conns[arm])
	}
	l.streams[arm]++
	go l.do(l.conns[arm][conn], *j)
}

// do runs on its own goroutine: it makes the request and hands the outcome back.
func (l *streamLane) do(c streamConn, j job) {
	o := outcome{intended: j.intended, dispatched: j.dispatched, record: j.record}
	c.do(&j, &o, l.now)
	l.mu.Lock()
	l.finished = append(l.finished, finishedCall{j: j, arm: j.arm, o: o})
	l.mu.Unlock()
	if l.needWake.Load() {
		signalEventfd(l.wake)
	}
}

// poll waits for the next due request (or at once when requests have finished and are
// needed) and accounts every finished request.
func (l *streamLane) poll(now time.Duration) {
	wait := time.Duration(-1)
	if l.sched != nil && !l.done {
		wait = max(0, min(l.wakeAt(), l.sched.sliceStart(l.nextBoundary))-now)
	}
	prompt := l.sched == nil || l.done || l.pending[0].size+l.pending[1].size > 0
	if prompt {
		l.needWake.Store(true)
		l.mu.Lock()
		if len(l.finished) > 0 {
			wait = 0
		}
		l.mu.Unlock()
	}
	if n, _ := epollWait(l.ep, l.events, wait); n > 0 {
		drainEventfd(l.wake)
	}
	l.needWake.Store(false)
	l.takeFinished()
}

// abandon drops the queued requests; the calls in flight end when release closes their
// connections, and are never accounted.
func (l *streamLane) abandon() {
	for arm := range l.pending {
		l.pending[arm].clear()
	}
}

func (l *streamLane) takeFinished() {
	l.mu.Lock()
	done := l.finished
	l.finished = l.spare[:0]
	l.mu.Unlock()
	var now time.Duration
	if len(done) > 0 && l.pending[0].size+l.pending[1].size > 0 {
		now = l.now()
	}
	for i := range done {
		f := &done[i]
		if d := l.dials[f.arm].Load(); d > l.seen[f.arm] {
			l.seen[f.arm] = d
			f.o.newConn = f.j.slice != primeSlice
		}
		l.streams[f.arm]--
		l.finish(&f.j, &f.o, f.arm)
		if next, ok := l.dequeue(&l.pending[f.arm], now); ok {
			l.start(&next, -1)
		}
	}
	l.spare = done
}
