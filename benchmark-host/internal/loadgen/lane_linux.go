package loadgen

import (
	"sync/atomic"
	"syscall"
	"time"
)

// lane is one event loop, as a wrk2 thread is: on its own locked OS thread it owns a share
// of the connections to each target (non-blocking sockets in its own epoll set) and the
// requests k ≡ index (mod lanes) of the one schedule. It sends each request when it is due,
// reads the responses, and accounts both in its own per-slice shards. Nothing crosses a
// goroutine or takes a lock per request: a request costs a write, a read and the wake-ups
// that the schedule and the response need.
//
// A transport that must block per call (gRPC's) plugs in beside it: a lane whose
// completions come back to its own goroutine, feeding the same schedule walk and shards.
type lane struct {
	walk
	w       *requestWriter
	targets [2]endpoint
	timeout time.Duration

	ep, wake int
	// idleEp holds only the wake eventfd: the lane sleeps on it until the next due request
	// when nothing needs a prompt answer, and collects the responses that arrived meanwhile
	// when it wakes (their times come from the kernel's receive stamps).
	idleEp  int
	opening int // connections connecting or with a request half written
	oob     []byte
	events  []syscall.EpollEvent
	conns   []*conn
	idle    [2][]*conn // open connections with nothing in flight, per arm
	closed  [2][]*conn // closed connections, opened again when a request needs one
	pending [2]jobRing // requests waiting for a connection of their arm

	nextExpiry time.Duration
}

// wakeID marks the lane's eventfd in epoll events; connections use their index.
const wakeID = -1

type connState uint8

const (
	csClosed connState = iota
	csIdle
	csConnecting
	csWriting
	csReading
)

// conn is one keep-alive connection and the request it carries.
type conn struct {
	fd       int // -1 when closed
	arm      int
	id       int32
	state    connState
	fresh    bool // opened for the request in flight (new_connections)
	retried  bool
	job      job
	entry    int
	sent     time.Duration
	deadline time.Duration
	out      []byte // request bytes not yet written
	wbuf     []byte // scratch for templated requests
	body     []byte
	rbuf     []byte
	rlen     int
	parser   responseParser
	arrival  int64 // kernel receive stamp of the response's latest bytes (CLOCK_REALTIME ns)
}

func newLane(index, count int, w *requestWriter, targets [2]endpoint, timeout time.Duration, clock monoClock,
	connsPerArm, queuePerArm int, stop *atomic.Int64, published chan<- *sliceShard) (*lane, error) {
	for arm := range targets {
		targets[arm] = targets[arm].forLane()
	}
	l := &lane{walk: walk{index: index, count: count, clock: clock, stop: stop, published: published},
		w: w, targets: targets, timeout: timeout, ep: -1, wake: -1, idleEp: -1, oob: make([]byte, 64)}
	l.carrier = l
	var err error
	if l.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if l.idleEp, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		l.release()
		return nil, err
	}
	if err := probeEpollPwait2(l.ep); err != nil {
		l.release()
		return nil, err
	}
	if l.wake, err = newEventfd(); err != nil {
		l.release()
		return nil, err
	}
	for _, ep := range []int{l.ep, l.idleEp} {
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, l.wake, &syscall.EpollEvent{Events: epollIn, Fd: wakeID}); err != nil {
			l.release()
			return nil, err
		}
	}
	// Connection i of an arm (across all lanes) belongs to lane i mod lanes.
	for arm := range 2 {
		for i := index; i < connsPerArm; i += count {
			c := &conn{fd: -1, arm: arm, id: int32(len(l.conns)), rbuf: make([]byte, 4096)}
			c.job.seq = ^uint64(i) // the priming request's seq, as before the schedule
			c.job.draw = c.job.seq
			l.conns = append(l.conns, c)
			l.closed[arm] = append(l.closed[arm], c)
		}
		l.pending[arm] = newJobRing(queuePerArm)
	}
	l.events = make([]syscall.EpollEvent, min(256, len(l.conns)+1))
	return l, nil
}

func (l *lane) base() *walk { return &l.walk }
func (l *lane) wakeFd() int { return l.wake }

// release closes every descriptor the lane holds.
func (l *lane) release() {
	for _, c := range l.conns {
		l.closeConn(c)
	}
	for _, fd := range []int{l.ep, l.idleEp, l.wake} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

// prime opens every connection and sends one request on each before the schedule starts,
// so the first slice pays no handshakes and both targets are proven reachable.
func (l *lane) prime() {
	l.closed = [2][]*conn{}
	for _, c := range l.conns {
		j := job{seq: c.job.seq, draw: c.job.draw, slice: primeSlice, arm: c.arm}
		l.inflight++
		l.assign(c, &j, l.now())
	}
	for l.inflight > 0 {
		l.poll(l.now())
	}
}

func (l *lane) submit(j *job) bool {
	if c := l.takeConn(j.arm); c != nil {
		l.inflight++
		l.assign(c, j, l.now())
		return true
	}
	if l.pending[j.arm].push(j) {
		l.inflight++
		return true
	}
	return false
}

// takeConn returns a free connection of the arm, an open one first.
func (l *lane) takeConn(arm int) *conn {
	for _, list := range []*[]*conn{&l.idle[arm], &l.closed[arm]} {
		if n := len(*list); n > 0 {
			c := (*list)[n-1]
			*list = (*list)[:n-1]
			return c
		}
	}
	return nil
}

// assign starts job j on connection c, opening the connection first if it is closed.
func (l *lane) assign(c *conn, j *job, now time.Duration) {
	c.job, c.sent, c.retried = *j, now, false
	c.entry = j.entry(l.w.plan, l.w.seed)
	l.encode(c)
	l.start(c, now)
}

// encode puts the bytes of c's request in c.out: an entry's shared static bytes, or its
// expansion into c's own buffers.
func (l *lane) encode(c *conn) {
	if b := l.w.entries[c.entry].static[c.arm]; b != nil {
		c.out = b
		return
	}
	c.wbuf = l.w.expand(c.wbuf[:0], &c.body, c.entry, c.arm, &c.job)
	c.out = c.wbuf
}

// start writes the request on c (connecting first when c is closed) and arms its deadline.
func (l *lane) start(c *conn, now time.Duration) {
	c.deadline = now + l.timeout
	if l.nextExpiry == 0 {
		l.nextExpiry = c.deadline
	}
	c.parser.reset(l.w.entries[c.entry].head)
	c.rlen, c.arrival = 0, 0
	if c.fd < 0 {
		fd, err := dialNonblocking(&l.targets[c.arm])
		if err != nil {
			l.complete(c, errConnect, 0, l.now())
			return
		}
		ev := syscall.EpollEvent{Events: epollIn | epollOut | epollRdHup | epollET, Fd: c.id}
		if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			syscall.Close(fd)
			l.complete(c, errConnect, 0, l.now())
			return
		}
		c.fd, c.fresh = fd, true
		l.setState(c, csConnecting)
		return
	}
	l.setState(c, csWriting)
	l.write(c)
}

func (l *lane) write(c *conn) {
	for len(c.out) > 0 {
		n, err := sendNonblocking(c.fd, c.out)
		switch {
		case err == syscall.EAGAIN:
			return // the socket's buffer is full: EPOLLOUT resumes
		case err == syscall.EINTR:
			continue
		case err != nil:
			l.fail(c, errOther)
			return
		}
		c.out = c.out[n:]
	}
	l.setState(c, csReading)
}

// setState moves c to state st, counting the connections that need prompt attention.
func (l *lane) setState(c *conn, st connState) {
	urgent := func(s connState) bool { return s == csConnecting || s == csWriting }
	if urgent(c.state) {
		l.opening--
	}
	if urgent(st) {
		l.opening++
	}
	c.state = st
}

// poll waits for the next due request, deadline or socket event, and handles the events.
// While no request waits for a connection and none is being opened or half-written, a
// response needs no prompt answer: the lane sleeps until the next due request and then takes
// every response that arrived, each timed by the kernel's receive stamp. Holding a finished
// connection until then costs no capacity: requests are only sent at those wake-ups, and a
// request that finds every connection held is sent as soon as the same wake-up has read
// them. One wake-up per request instead of two (docs/design/0016-generator-cpu.md: that halved the
// context switches, the bulk of the generator's CPU).
func (l *lane) poll(now time.Duration) {
	if l.nextExpiry != 0 && now >= l.nextExpiry {
		// Take what has arrived first: a response the lane has not read yet came in time.
		l.handle(epollWait(l.ep, l.events, 0))
		l.expire(l.now())
		// Back to the caller, which decides what to wait for now: when the requests that
		// expired were the last ones (priming, or the end of the schedule), there may be
		// nothing left to wait for, and a wait without a deadline would never end.
		return
	}
	wait := time.Duration(-1)
	if l.sched != nil && !l.done {
		wait = max(0, min(l.wakeAt(), l.sched.sliceStart(l.nextBoundary))-now)
	}
	if l.nextExpiry != 0 {
		if d := max(0, l.nextExpiry-now); wait < 0 || d < wait {
			wait = d
		}
	}
	if l.sched != nil && !l.done && l.opening == 0 && l.pending[0].size+l.pending[1].size == 0 {
		l.handle(epollWait(l.idleEp, l.events, wait))
		// Send what is due before reading what came: the responses' times are the kernel's
		// already, and the requests' are not.
		l.advance(l.now())
		wait = 0
	}
	l.handle(epollWait(l.ep, l.events, wait))
}

func (l *lane) handle(n int, _ error) {
	for _, ev := range l.events[:n] {
		if ev.Fd == wakeID {
			drainEventfd(l.wake)
			continue
		}
		l.event(l.conns[ev.Fd], ev.Events)
	}
}

func (l *lane) event(c *conn, ev uint32) {
	switch c.state {
	case csConnecting:
		if ev&(epollOut|epollErr|epollHup) == 0 {
			return
		}
		if socketError(c.fd) != nil {
			l.closeConn(c)
			l.complete(c, errConnect, 0, l.now())
			return
		}
		l.setState(c, csWriting)
		l.write(c)
	case csWriting:
		if ev&(epollOut|epollErr|epollHup) != 0 {
			l.write(c)
		}
	case csReading:
		if ev&(epollIn|epollRdHup|epollErr|epollHup) != 0 {
			l.read(c)
		}
	case csIdle:
		if ev&(epollIn|epollRdHup|epollErr|epollHup) != 0 {
			l.readIdle(c)
		}
	}
}

// read takes what the socket holds and completes the request once its response has ended.
func (l *lane) read(c *conn) {
	for {
		if c.rlen == len(c.rbuf) {
			c.rbuf = append(c.rbuf, make([]byte, len(c.rbuf))...)
		}
		avail := len(c.rbuf) - c.rlen
		n, arrival, err := recvStamped(c.fd, c.rbuf[c.rlen:], l.oob)
		if arrival != 0 {
			c.arrival = arrival
		}
		switch {
		case err == syscall.EAGAIN:
			return
		case err == syscall.EINTR:
			continue
		case err != nil:
			l.fail(c, errOther)
			return
		case n == 0:
			if c.parser.eof() == nil {
				l.closeConn(c)
				l.complete(c, errNone, c.parser.status, l.arrivedAt(c))
			} else {
				l.fail(c, errOther)
			}
			return
		}
		c.rlen += n
		used, perr := c.parser.feed(c.rbuf[:c.rlen])
		if perr != nil {
			l.fail(c, errOther)
			return
		}
		if c.parser.done() {
			// Bytes after the response were not asked for: the connection is out of step.
			if used < c.rlen || c.parser.close {
				l.closeConn(c)
			}
			l.complete(c, errNone, c.parser.status, l.arrivedAt(c))
			return
		}
		c.rlen = copy(c.rbuf, c.rbuf[used:c.rlen])
		if n < avail && c.parser.state != stUntilClose {
			// The socket is drained; with edge-triggered epoll, more data brings a new event.
			// (A body that ends at the close reads on to EOF: the FIN's edge may be spent.)
			return
		}
	}
}

// arrivedAt is when the end of c's response reached the socket, on the run's clock: the
// kernel's receive stamp (CLOCK_REALTIME) carried over to the monotonic clock at a reading of
// both, so a response read late still counts from when it came. Without a usable stamp
// (none given, or the wall clock stepped) it is now.
func (l *lane) arrivedAt(c *conn) time.Duration {
	t := time.Now()
	now := t.Sub(l.clock.base)
	if c.arrival == 0 {
		return now
	}
	at := now - time.Duration(t.UnixNano()-c.arrival)
	if at < c.sent || at > now {
		return now
	}

	return at
}

// readIdle handles an idle connection the server closed (or wrote to unasked): it is closed,
// and opened again when a request needs it.
func (l *lane) readIdle(c *conn) {
	var b [64]byte
	n, err := syscall.Read(c.fd, b[:])
	if err == syscall.EAGAIN {
		return
	}
	_ = n
	l.removeIdle(c)
	l.closeConn(c)
	l.closed[c.arm] = append(l.closed[c.arm], c)
}

func (l *lane) removeIdle(c *conn) {
	list := l.idle[c.arm]
	for i, x := range list {
		if x == c {
			list[i] = list[len(list)-1]
			l.idle[c.arm] = list[:len(list)-1]
			return
		}
	}
}

// fail ends the request on c with an error and closes the connection. A request that found
// a reused connection already closed by the server (nothing of a response came back) is
// sent once more on a new one, as net/http does for idempotent requests: keep-alive races
// are not the service's errors.
func (l *lane) fail(c *conn, class errClass) {
	retry := class == errOther && !c.fresh && !c.retried && c.rlen == 0 && c.parser.state == stStatus &&
		idempotent(l.w.entries[c.entry].req.Method)
	l.closeConn(c)
	if retry {
		// The retry's time counts: latency and service time run from the first send.
		c.retried = true
		l.encode(c)
		l.start(c, l.now())
		return
	}
	l.complete(c, class, 0, l.now())
}

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

func (l *lane) closeConn(c *conn) {
	if c.fd >= 0 {
		syscall.Close(c.fd) // closing removes it from the epoll set
		c.fd = -1
	}
	l.setState(c, csClosed)
}

// complete accounts the request on c and gives the connection its arm's next queued request.
func (l *lane) complete(c *conn, class errClass, status int, done time.Duration) {
	j := &c.job
	o := outcome{intended: j.intended, dispatched: j.dispatched, sent: c.sent, done: done, status: status, errClass: class,
		record: j.record, newConn: c.fresh, entry: c.entry}
	c.fresh = false
	l.finish(j, &o, c.arm)
	if c.fd >= 0 {
		l.setState(c, csIdle)
	}
	if l.pending[c.arm].size > 0 {
		now := l.now()
		if next, ok := l.dequeue(&l.pending[c.arm], now); ok {
			l.assign(c, &next, now)
			return
		}
	}
	if c.fd >= 0 {
		l.idle[c.arm] = append(l.idle[c.arm], c)
	} else {
		l.closed[c.arm] = append(l.closed[c.arm], c)
	}
}

// abandon drops the queued requests and closes every connection with a request on it.
func (l *lane) abandon() {
	for arm := range l.pending {
		l.pending[arm].clear()
	}
	for _, c := range l.conns {
		if c.state >= csConnecting {
			l.closeConn(c)
			l.closed[c.arm] = append(l.closed[c.arm], c)
		}
	}
	l.nextExpiry = 0
}

// expire fails every request past its deadline (counted as a timeout, recorded at its
// latency) and finds the next deadline. Deadlines follow send order, so this runs about once
// per timeout, not per request.
func (l *lane) expire(now time.Duration) {
	l.nextExpiry = 0
	for _, c := range l.conns {
		if c.state < csConnecting {
			continue
		}
		if c.deadline <= now {
			c.retried = true // a timeout is the service's answer, never retried
			l.closeConn(c)
			l.complete(c, errTimeout, 0, now)
		}
	}
	for _, c := range l.conns {
		if c.state >= csConnecting && (l.nextExpiry == 0 || c.deadline < l.nextExpiry) {
			l.nextExpiry = c.deadline
		}
	}
}
