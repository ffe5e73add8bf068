package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// job is one request on the schedule, handed from the dispatcher to a worker.
type job struct {
	seq      uint64
	intended time.Time
	slice    int       // -1 during warmup
	acc      *sliceAcc // nil during warmup
	record   bool
}

// worker owns exactly one keep-alive connection to its target, like a wrk2 connection: a
// request waits in the queue, not inside the transport, so queueing shows in dispatch lag
// and corrected latency while service time stays the server's own.
//
// Timeouts are enforced by the runner's watchdog, not by http.Client.Timeout: a per-request
// runtime timer wakes the network poller on every request and cost 12% of the CPU.
type worker struct {
	arm      string
	client   *http.Client
	dials    atomic.Int64
	factory  *requestFactory
	cache    []*http.Request // per workload entry, for entries with no placeholder
	conn     atomic.Pointer[net.Conn]
	deadline atomic.Int64 // monotonic ns since the runner's clock base; 0 when idle
	timedOut atomic.Bool
}

func newWorker(arm string, f *requestFactory, timeout time.Duration) *worker {
	w := &worker{arm: arm, factory: f, cache: make([]*http.Request, len(f.entries))}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	w.client = &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				w.dials.Add(1)
				c, err := dialer.DialContext(ctx, network, addr)
				if err == nil {
					w.conn.Store(&c)
				}
				return c, err
			},
			MaxIdleConns:        1,
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			IdleConnTimeout:     0,
			DisableCompression:  true,
		},
		// A redirect is the service's answer; following it would time a second request.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return w
}

// do sends one request and classifies its outcome. The deadline is in ns on clock's scale.
func (w *worker) do(j *job, clock *monoClock, timeout time.Duration) outcome {
	o := outcome{intended: j.intended, record: j.record}
	req, err := w.request(j)
	if err != nil {
		o.sent, o.done, o.errClass = time.Now(), time.Now(), errOther
		return o
	}
	dials := w.dials.Load()
	o.sent = time.Now()
	w.deadline.Store(int64(clock.since(o.sent) + timeout))
	resp, err := w.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.status = resp.StatusCode
	}
	w.deadline.Store(0)
	o.done = time.Now()
	o.newConn = w.dials.Load() != dials
	if w.timedOut.Swap(false) {
		o.errClass = errTimeout
	} else if err != nil {
		o.errClass = classify(err)
	}
	return o
}

// expire closes the connection of a request past its deadline; the request then fails and
// is counted as a timeout.
func (w *worker) expire(now time.Duration) {
	if d := w.deadline.Load(); d != 0 && int64(now) > d {
		if c := w.conn.Load(); c != nil && w.deadline.CompareAndSwap(d, 0) {
			w.timedOut.Store(true)
			(*c).Close()
		}
	}
}

// request builds the request for a job; a request with no placeholder is built once per
// worker and reused, which net/http allows once the previous response body is closed.
func (w *worker) request(j *job) (*http.Request, error) {
	i := w.factory.pick(j.seq)
	if r := w.cache[i]; r != nil {
		return r, nil
	}
	r, err := w.factory.build(i, j, w.arm)
	if err == nil && w.factory.entries[i].static {
		w.cache[i] = r
	}
	return r, err
}

func classify(err error) errClass {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return errTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return errConnect
	}
	return errOther
}

// requestFactory expands the workload for one request; static parts are expanded once.
type requestFactory struct {
	plan    *plan.Plan
	seed    uint64
	entries []factoryEntry
}

type factoryEntry struct {
	req        *plan.CompiledRequest
	staticPath map[string]string // arm → full URL, when the path has no placeholder
	staticBody *string
	static     bool // no placeholder anywhere and no body: the request can be reused
}

func newRequestFactory(p *plan.Plan) *requestFactory {
	f := &requestFactory{plan: p, seed: uint64(*p.Seed)}
	for i := range p.Compiled() {
		c := &p.Compiled()[i]
		e := factoryEntry{req: c}
		if c.Path.IsStatic() {
			e.staticPath = map[string]string{
				contract.Champion:   joinURL(p.Targets.Champion, c.Path.String()),
				contract.Challenger: joinURL(p.Targets.Challenger, c.Path.String()),
			}
		}
		if c.Body.IsStatic() {
			b := c.Body.String()
			e.staticBody = &b
		}
		e.static = e.staticPath != nil && e.staticBody != nil && *e.staticBody == ""
		for _, h := range c.Headers {
			e.static = e.static && h.Value.IsStatic()
		}
		f.entries = append(f.entries, e)
	}
	return f
}

func (f *requestFactory) pick(seq uint64) int {
	return f.plan.Pick(plan.Uniform(f.seed, seq))
}

func (f *requestFactory) build(i int, j *job, arm string) (*http.Request, error) {
	e := &f.entries[i]
	c := e.req
	v := plan.Vars{Seed: f.seed, Seq: j.seq, Run: f.plan.RunID, Arm: arm, Slice: j.slice}
	url, ok := e.staticPath[arm]
	if !ok {
		url = joinURL(f.plan.Target(arm), string(c.Path.Append(nil, &v)))
	}
	var body io.Reader
	if e.staticBody != nil {
		if *e.staticBody != "" {
			body = strings.NewReader(*e.staticBody)
		}
	} else {
		body = strings.NewReader(string(c.Body.Append(nil, &v)))
	}
	req, err := http.NewRequest(c.Method, url, body)
	if err != nil {
		return nil, err
	}
	for _, h := range c.Headers {
		if h.Value.IsStatic() {
			req.Header.Set(h.Name, h.Value.String())
		} else {
			req.Header.Set(h.Name, string(h.Value.Append(nil, &v)))
		}
	}
	return req, nil
}

func joinURL(base, path string) string {
	return strings.TrimSuffix(base, "/") + path
}
