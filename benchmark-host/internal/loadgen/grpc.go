package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// streamsPerConn bounds the calls in flight on one HTTP/2 connection: the common default of
// SETTINGS_MAX_CONCURRENT_STREAMS (grpc-go's and most servers'), so that a call never waits
// inside grpc-go, unseen, for a stream. Beyond connections × streamsPerConn calls of an arm
// wait in the lane's queue (max_queue), as HTTP/1.1 requests wait for a connection.
const streamsPerConn = 100

// grpcLane is a lane whose carrier is gRPC (issue 16): unary calls through grpc-go over the
// lane's share of HTTP/2 connections per target, each carrying concurrent streams. It walks
// the same schedule with the same shards as the HTTP/1.1 event loop; only what puts a
// request on the wire differs. grpc-go's Invoke blocks, so each call runs on a goroutine of
// its own, stamps its own send and completion times on the run's clock and hands the outcome
// back to the lane, which accounts it on its own goroutine: the shards stay lock-free.
type grpcLane struct {
	walk
	calls   *callWriter
	timeout time.Duration
	conns   [2][]*grpc.ClientConn
	next    [2]int // round robin over the arm's connections
	streams [2]int // calls in flight per arm
	limit   int    // calls in flight per arm before queueing
	pending [2]jobRing
	dials   [2]atomic.Int64 // connections opened, per arm
	seen    [2]int64        // dials already counted as new_connections

	ep, wake int
	events   []syscall.EpollEvent
	// The lane is woken for finished calls only when it needs them promptly (queued
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

func newGRPCLane(index, count int, calls *callWriter, targets [2]endpoint, timeout time.Duration, clock monoClock,
	connsPerArm, queuePerArm int, stop *atomic.Int64, published chan<- *sliceShard) (*grpcLane, error) {
	l := &grpcLane{walk: walk{index: index, count: count, clock: clock, stop: stop, published: published},
		calls: calls, timeout: timeout, ep: -1, wake: -1}
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
		addr := targets[arm].hostPort()
		for i := index; i < connsPerArm; i += count {
			cc, err := grpc.NewClient("passthrough:///"+addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(l.dialer(arm)),
				grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})),
				grpc.WithUserAgent(userAgent))
			if err != nil {
				l.release()
				return nil, fmt.Errorf("plan: targets.%s: %w", armNames[arm], err)
			}
			l.conns[arm] = append(l.conns[arm], cc)
		}
		l.pending[arm] = newJobRing(queuePerArm)
	}
	l.limit = len(l.conns[0]) * streamsPerConn
	return l, nil
}

// dialer opens the arm's connections, counting each (new_connections).
func (l *grpcLane) dialer(arm int) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			l.dials[arm].Add(1)
		}
		return c, err
	}
}

func (l *grpcLane) release() {
	for _, arm := range l.conns {
		for _, cc := range arm {
			cc.Close()
		}
	}
	for _, fd := range []int{l.ep, l.wake} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

func (l *grpcLane) base() *walk { return &l.walk }
func (l *grpcLane) wakeFd() int { return l.wake }

// prime makes one call on each connection before the schedule starts, so the first slice
// pays no handshakes and both targets are proven to answer the workload's first call.
func (l *grpcLane) prime() {
	for arm := range 2 {
		for i := range l.conns[arm] {
			j := job{seq: ^uint64(i), slice: primeSlice, arm: arm}
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

func (l *grpcLane) submit(j *job) bool {
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

// start makes the call of j on connection conn of its arm (-1: the next in turn).
func (l *grpcLane) start(j *job, conn int) {
	arm := j.arm
	if conn < 0 {
		conn = l.next[arm]
		l.next[arm] = (conn + 1) % len(l.conns[arm])
	}
	l.streams[arm]++
	go l.call(l.conns[arm][conn], *j)
}

// call runs on its own goroutine: it encodes the message, makes the call and hands the
// outcome back. The send time is taken after encoding, just before grpc-go writes.
func (l *grpcLane) call(cc *grpc.ClientConn, j job) {
	entry := l.calls.pick(j.seq)
	o := outcome{intended: j.intended, dispatched: j.dispatched, record: j.record}
	msg, md, err := l.calls.encode(entry, j.arm, j.seq, max(j.slice, -1))
	o.sent = l.now()
	if err != nil {
		o.done, o.errClass = o.sent, errOther
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		if md != nil {
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
		var reply []byte
		err = cc.Invoke(ctx, l.calls.entries[entry].method, &msg, &reply)
		o.done = l.now()
		o.errClass, o.grpcCode = classifyCall(err, ctx, cc)
		cancel()
	}
	l.mu.Lock()
	l.finished = append(l.finished, finishedCall{j: j, arm: j.arm, o: o})
	l.mu.Unlock()
	if l.needWake.Load() {
		signalEventfd(l.wake)
	}
}

// classifyCall sorts a finished call: OK; past the deadline (timeout_ms), a timeout; a
// connection that could not be made (UNAVAILABLE with the connection not ready), connect;
// any other status by its code.
func classifyCall(err error, ctx context.Context, cc *grpc.ClientConn) (errClass, uint32) {
	if err == nil {
		return errNone, 0
	}
	code := status.Code(err)
	switch {
	case code == codes.DeadlineExceeded && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errTimeout, 0
	case code == codes.Unavailable && cc.GetState() != connectivity.Ready:
		return errConnect, 0
	}
	return errGRPC, uint32(code)
}

// poll waits for the next due request (or at once when calls have finished and are needed)
// and accounts every finished call.
func (l *grpcLane) poll(now time.Duration) {
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

func (l *grpcLane) takeFinished() {
	l.mu.Lock()
	done := l.finished
	l.finished = l.spare[:0]
	l.mu.Unlock()
	for i := range done {
		f := &done[i]
		if d := l.dials[f.arm].Load(); d > l.seen[f.arm] {
			l.seen[f.arm] = d
			f.o.newConn = f.j.slice != primeSlice
		}
		l.streams[f.arm]--
		l.finish(&f.j, &f.o, f.arm)
		if next, ok := l.pending[f.arm].pop(); ok {
			l.start(&next, -1)
		}
	}
	l.spare = done
}

// grpcCodeNames are the gRPC status codes as the result names them.
var grpcCodeNames = [...]string{"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
	"already_exists", "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
	"unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"}

func grpcCodeName(c uint32) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return "code_" + strconv.FormatUint(uint64(c), 10)
}

// rawCodec hands grpc-go messages already encoded by protobuf (callWriter) and leaves the
// answers undecoded: the call's status is what is measured, and decoding the reply would
// only add the generator's CPU.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }

func (rawCodec) Name() string { return "proto" }
