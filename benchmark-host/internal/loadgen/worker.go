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
type worker struct {
	arm     string
	client  *http.Client
	dials   atomic.Int64
	factory *requestFactory
}

func newWorker(arm string, f *requestFactory, timeout time.Duration) *worker {
	w := &worker{arm: arm, factory: f}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	w.client = &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				w.dials.Add(1)
				return dialer.DialContext(ctx, network, addr)
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

// do sends one request and classifies its outcome.
func (w *worker) do(j *job) outcome {
	o := outcome{intended: j.intended, record: j.record}
	req, err := w.factory.build(j, w.arm)
	if err != nil {
		o.sent, o.done, o.errClass = time.Now(), time.Now(), errOther
		return o
	}
	dials := w.dials.Load()
	o.sent = time.Now()
	resp, err := w.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.status = resp.StatusCode
	}
	o.done = time.Now()
	o.newConn = w.dials.Load() != dials
	if err != nil {
		o.errClass = classify(err)
	}
	return o
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
}

func newRequestFactory(p *plan.Plan) *requestFactory {
	f := &requestFactory{plan: p, seed: uint64(*p.Seed)}
	for i := range p.Compiled() {
		c := &p.Compiled()[i]
		e := factoryEntry{req: c}
		if c.Path.IsStatic() {
			e.staticPath = map[string]string{
				plan.Champion:   joinURL(p.Targets.Champion, c.Path.String()),
				plan.Challenger: joinURL(p.Targets.Challenger, c.Path.String()),
			}
		}
		if c.Body.IsStatic() {
			b := c.Body.String()
			e.staticBody = &b
		}
		f.entries = append(f.entries, e)
	}
	return f
}

func (f *requestFactory) build(j *job, arm string) (*http.Request, error) {
	e := &f.entries[f.plan.Pick(plan.Uniform(f.seed, j.seq))]
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
