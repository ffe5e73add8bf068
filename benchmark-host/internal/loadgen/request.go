package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// endpoint is where one arm's requests go: a resolved socket address, the Host header and
// the base URL's path prefix.
type endpoint struct {
	arm      string
	url      string
	sockaddr syscall.Sockaddr
	family   int
	host     string
	prefix   string
}

// resolveEndpoint resolves an arm's base URL once, before the run: no name lookups on the
// schedule.
func resolveEndpoint(ctx context.Context, arm, raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return endpoint{}, fmt.Errorf("plan: targets.%s: %w", arm, err)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", u.Hostname())
	if err != nil || len(ips) == 0 {
		return endpoint{}, fmt.Errorf("plan: targets.%s: cannot resolve %q: %v", arm, u.Hostname(), err)
	}
	p, _ := strconv.Atoi(port)
	e := endpoint{arm: arm, url: raw, host: u.Host, prefix: strings.TrimSuffix(u.EscapedPath(), "/")}
	ip := ips[0]
	for _, c := range ips {
		if c.To4() != nil {
			ip = c
			break
		}
	}
	if v4 := ip.To4(); v4 != nil {
		sa := &syscall.SockaddrInet4{Port: p}
		copy(sa.Addr[:], v4)
		e.sockaddr, e.family = sa, syscall.AF_INET
	} else {
		sa := &syscall.SockaddrInet6{Port: p}
		copy(sa.Addr[:], ip.To16())
		e.sockaddr, e.family = sa, syscall.AF_INET6
	}
	return e, nil
}

// hostPort is the resolved address, host:port.
func (e endpoint) hostPort() string {
	switch sa := e.sockaddr.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	}
	return e.host
}

// forLane copies e for one lane: connect(2) fills a buffer inside the socket address, so
// lanes must not share one.
func (e endpoint) forLane() endpoint {
	switch sa := e.sockaddr.(type) {
	case *syscall.SockaddrInet4:
		c := *sa
		e.sockaddr = &c
	case *syscall.SockaddrInet6:
		c := *sa
		e.sockaddr = &c
	}
	return e
}

// requestWriter turns workload entries into HTTP/1.1 request bytes. An entry with no
// placeholder is encoded once per arm and its bytes reused for every request; a templated
// one is expanded into the connection's own buffers.
type requestWriter struct {
	plan    *plan.Plan
	seed    uint64
	targets [2]endpoint
	entries []wireEntry
}

type wireEntry struct {
	req          *plan.CompiledRequest
	static       [2][]byte // per arm; nil when a placeholder is anywhere
	head         bool      // a HEAD request: its response has no body
	sendLength   bool      // Content-Length is sent even for an empty body
	hasHost      bool
	hasUserAgent bool
}

// userAgent names the generator to the server unless the plan sets User-Agent.
const userAgent = "perf-gate-loadgen"

func newRequestWriter(p *plan.Plan, targets [2]endpoint) *requestWriter {
	w := &requestWriter{plan: p, seed: uint64(*p.Seed), targets: targets}
	for i := range p.Compiled() {
		c := &p.Compiled()[i]
		e := wireEntry{req: c, head: c.Method == "HEAD"}
		// As net/http does: methods that carry a body say so even when it is empty.
		e.sendLength = c.Method == "POST" || c.Method == "PUT" || c.Method == "PATCH"
		static := c.Path.IsStatic() && c.Body.IsStatic()
		for _, h := range c.Headers {
			static = static && h.Value.IsStatic()
			switch textproto.CanonicalMIMEHeaderKey(h.Name) {
			case "Host":
				e.hasHost = true
			case "User-Agent":
				e.hasUserAgent = true
			}
		}
		w.entries = append(w.entries, e)
		if static {
			for arm := range targets {
				var body []byte
				w.entries[i].static[arm] = w.encode(nil, &body, i, arm, &plan.Vars{})
			}
		}
	}
	return w
}

// expand appends the bytes of a templated request to buf, using body as scratch.
func (w *requestWriter) expand(buf []byte, body *[]byte, entry, arm int, j *job) []byte {
	v := j.vars(w.seed, w.plan.RunID, w.targets[arm].arm)
	return w.encode(buf, body, entry, arm, &v)
}

func (w *requestWriter) encode(buf []byte, body *[]byte, entry, arm int, v *plan.Vars) []byte {
	e := &w.entries[entry]
	c := e.req
	*body = c.Body.Append((*body)[:0], v)
	buf = append(buf, c.Method...)
	buf = append(buf, ' ')
	buf = append(buf, w.targets[arm].prefix...)
	buf = appendPath(buf, c.Path, v)
	buf = append(buf, " HTTP/1.1\r\n"...)
	if !e.hasHost {
		buf = append(buf, "Host: "...)
		buf = append(buf, w.targets[arm].host...)
		buf = append(buf, "\r\n"...)
	}
	if !e.hasUserAgent {
		buf = append(buf, "User-Agent: "+userAgent+"\r\n"...)
	}
	for _, h := range c.Headers {
		buf = append(buf, h.Name...)
		buf = append(buf, ": "...)
		buf = h.Value.Append(buf, v)
		buf = append(buf, "\r\n"...)
	}
	if len(*body) > 0 || e.sendLength {
		buf = append(buf, "Content-Length: "...)
		buf = strconv.AppendInt(buf, int64(len(*body)), 10)
		buf = append(buf, "\r\n"...)
	}
	buf = append(buf, "\r\n"...)
	return append(buf, *body...)
}

// appendPath expands the path and percent-encodes what may not stand in a request line
// (spaces, controls, non-ASCII), as net/http's URL.EscapedPath does; '%' is left alone so an
// already-encoded path goes out as written.
func appendPath(buf []byte, t plan.Template, v *plan.Vars) []byte {
	start := len(buf)
	buf = t.Append(buf, v)
	for i := start; i < len(buf); i++ {
		if c := buf[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			return escapeFrom(buf, start)
		}
	}
	return buf
}

func escapeFrom(buf []byte, start int) []byte {
	raw := string(buf[start:])
	buf = buf[:start]
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			buf = append(buf, '%', hex[c>>4], hex[c&15])
		} else {
			buf = append(buf, c)
		}
	}
	return buf
}
