package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// h2cConn is one HTTP/2 connection without TLS (protocol h2c, docs/design/0015-grpc-and-h2c.md): an
// http plan's requests through Go's HTTP/2 transport with prior knowledge. Each connection is a
// transport of its own that never opens a second one (StrictMaxConcurrentRequests), so connections
// means HTTP/2 connections per target, each carrying concurrent streams.
type h2cConn struct {
	transport *http.Transport
	client    *http.Client
	reqs      *h2cRequests
	timeout   time.Duration
	// ctx is every request's: close cancels it, so that requests abandoned in flight (a run
	// stopped) end with the connection, as grpc-go's calls do when their ClientConn closes.
	ctx    context.Context
	cancel context.CancelFunc
}

// dialH2C makes the connections of an h2c plan; the transport dials on the first request.
func dialH2C(reqs *h2cRequests, timeout time.Duration) dialStream {
	return func(arm int, addr string, dial func(context.Context, string) (net.Conn, error)) (streamConn, error) {
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		t := &http.Transport{
			Protocols:          &protocols,
			DialContext:        func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
			HTTP2:              &http.HTTP2Config{StrictMaxConcurrentRequests: true},
			DisableCompression: true,
		}
		ctx, cancel := context.WithCancel(context.Background())
		return &h2cConn{transport: t, client: &http.Client{Transport: t}, reqs: reqs, timeout: timeout, ctx: ctx, cancel: cancel}, nil
	}
}

func (c *h2cConn) close() {
	c.cancel()
	c.transport.CloseIdleConnections()
}

// do builds the request and sends it; the send time is taken once it is built, just before
// the transport writes, and the answer is read to its end.
func (c *h2cConn) do(j *job, o *outcome, now func() time.Duration) {
	ctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	o.entry = j.entry(c.reqs.plan, c.reqs.seed)
	req, err := c.reqs.build(ctx, j, o.entry)
	o.sent = now()
	if err != nil {
		o.done, o.errClass = o.sent, errOther
		return
	}
	resp, err := c.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.status = resp.StatusCode
	}
	o.done = now()
	o.errClass = classifyH2C(err, ctx)
}

// classifyH2C sorts a failed request as the HTTP/1.1 loop does: past the deadline
// (timeout_ms), a timeout; a connection that could not be made, connect; anything else
// (a reset stream, a malformed answer), other.
func classifyH2C(err error, ctx context.Context) errClass {
	var op *net.OpError
	switch {
	case err == nil:
		return errNone
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errTimeout
	case errors.As(err, &op) && op.Op == "dial":
		return errConnect
	}
	return errOther
}

// h2cRequests turns an http plan's requests into net/http requests for one arm: the same
// templates, path escaping, Host and User-Agent as the HTTP/1.1 writer.
type h2cRequests struct {
	plan    *plan.Plan
	seed    uint64
	targets [2]endpoint
}

func newH2CRequests(p *plan.Plan, targets [2]endpoint) *h2cRequests {
	return &h2cRequests{plan: p, seed: uint64(*p.Seed), targets: targets}
}

func (w *h2cRequests) build(ctx context.Context, j *job, entry int) (*http.Request, error) {
	t := &w.targets[j.arm]
	c := &w.plan.Compiled()[entry]
	v := j.vars(w.seed, w.plan.RunID, t.arm)
	url := appendPath([]byte("http://"+t.hostPort()+t.prefix), c.Path, &v)
	var body io.Reader = http.NoBody
	if b := c.Body.Append(nil, &v); len(b) > 0 {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, string(url), body)
	if err != nil {
		return nil, err
	}
	req.Host = t.host
	req.Header.Set("User-Agent", userAgent)
	for _, h := range c.Headers {
		value := string(h.Value.Append(nil, &v))
		switch textproto.CanonicalMIMEHeaderKey(h.Name) {
		case "Host":
			req.Host = value
		case "User-Agent":
			req.Header.Set(h.Name, value)
		default:
			req.Header.Add(h.Name, value)
		}
	}
	return req, nil
}
