package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parsed is one response as a parser framed it: its status and where it ended in the stream.
type parsed struct {
	status int
	end    int
	close  bool
}

// frameWithParser feeds stream to responseParser in chunks of the sizes next gives, as a
// socket would, and returns the responses it framed (heads[i]: request i was HEAD).
func frameWithParser(t *testing.T, stream []byte, heads []bool, next func() int) []parsed {
	t.Helper()
	var out []parsed
	var p responseParser
	var pending []byte // bytes read but not yet consumed, as in a connection's buffer
	pos := 0
	for i := range heads {
		p.reset(heads[i])
		for {
			used, err := p.feed(pending)
			if err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			pending = pending[used:]
			if p.done() {
				break
			}
			if pos == len(stream) {
				if err := p.eof(); err != nil {
					t.Fatalf("response %d: %v at end of stream", i, err)
				}
				break
			}
			n := min(next(), len(stream)-pos)
			pending = append(append([]byte(nil), pending...), stream[pos:pos+n]...)
			pos += n
		}
		out = append(out, parsed{status: p.status, end: pos - len(pending), close: p.close})
	}
	return out
}

// frameWithNetHTTP frames the same stream with Go's net/http client parser: the reference.
func frameWithNetHTTP(t *testing.T, stream []byte, methods []string) []parsed {
	t.Helper()
	cr := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReader(cr)
	var out []parsed
	for i, m := range methods {
		resp, err := readFinalResponse(br, m)
		if err != nil {
			t.Fatalf("net/http, response %d: %v", i, err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("net/http, response %d body: %v", i, err)
		}
		resp.Body.Close()
		out = append(out, parsed{status: resp.StatusCode, end: cr.n - br.Buffered(), close: resp.Close})
	}
	return out
}

// readFinalResponse reads past interim 1xx responses, as net/http's client does.
func readFinalResponse(br *bufio.Reader, method string) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == 101 {
			return resp, err
		}
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// exchange sends the requests on one connection, pipelined, and returns every byte the
// server answered, read until it closes (the last request asks it to).
func exchange(t *testing.T, addr string, requests []string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.Join(requests, "")); err != nil {
		t.Fatal(err)
	}
	stream, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func request(method, path string, closing bool) string {
	r := method + " " + path + " HTTP/1.1\r\nHost: test\r\n"
	if closing {
		r += "Connection: close\r\n"
	}
	return r + "\r\n"
}

// checkStream frames a server's stream with both parsers, whole and in random pieces, and
// wants the same responses at the same boundaries.
func checkStream(t *testing.T, name string, stream []byte, methods []string) {
	t.Helper()
	heads := make([]bool, len(methods))
	for i, m := range methods {
		heads[i] = m == "HEAD"
	}
	want := frameWithNetHTTP(t, stream, methods)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, split := range []struct {
		name string
		next func() int
	}{
		{"whole", func() int { return len(stream) }},
		{"byte by byte", func() int { return 1 }},
		{"random pieces", func() int { return 1 + rng.IntN(700) }},
	} {
		got := frameWithParser(t, stream, heads, split.next)
		for i := range want {
			// net/http's Close also covers a request that asked for it; the parser's is the
			// server's word, which is what decides whether the connection can be reused.
			if got[i].status != want[i].status || got[i].end != want[i].end || (want[i].close && !got[i].close && i < len(want)-1) {
				t.Errorf("%s, %s, response %d: parser %+v, net/http %+v", name, split.name, i, got[i], want[i])
			}
		}
	}
	t.Logf("%s: %d responses, %d bytes, statuses %v", name, len(want), len(stream), statuses(want))
}

func statuses(ps []parsed) []int {
	var s []int
	for _, p := range ps {
		s = append(s, p.status)
	}
	return s
}

// Responses from Go's net/http server: Content-Length, chunked, 1xx, 204, 304, HEAD, a
// large chunked body, and a closing response.
func TestResponseParserFramesGoNetHTTPResponses(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Write([]byte("hello"))
		case "/chunked":
			w.Write([]byte("part one;"))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			w.Write([]byte("body"))
			w.(http.Flusher).Flush()
			w.Header().Set("X-Sum", "42")
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Write([]byte("after hints"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/cached":
			w.WriteHeader(http.StatusNotModified)
		case "/big":
			w.Write([]byte(big))
			w.(http.Flusher).Flush()
			w.Write([]byte(big))
		case "/missing":
			http.NotFound(w, r)
		default:
			w.Write([]byte("x"))
		}
	}))
	defer srv.Close()
	paths := []string{"/length", "/chunked", "/trailer", "/hints", "/empty", "/cached", "/big", "/missing", "/length"}
	var reqs, methods []string
	for _, p := range paths {
		reqs, methods = append(reqs, request("GET", p, false)), append(methods, "GET")
	}
	reqs, methods = append(reqs, request("HEAD", "/big", false), request("GET", "/length", true)), append(methods, "HEAD", "GET")
	checkStream(t, "Go net/http", exchange(t, strings.TrimPrefix(srv.URL, "http://"), reqs), methods)
}

// Node's http server answers chunked when the handler writes before ending, and a Content-
// Length otherwise.
func TestResponseParserFramesNodeResponses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := `const http = require("http");
const s = http.createServer((req, res) => {
  if (req.url === "/chunked") { res.write("a"); res.write("bb"); res.end("ccc"); }
  else if (req.url === "/status") { res.statusCode = 503; res.end("busy"); }
  else res.end("plain");
});
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`
	addr := startServerProcess(t, node, "-e", script)
	reqs := []string{request("GET", "/chunked", false), request("GET", "/plain", false), request("GET", "/status", false),
		request("HEAD", "/chunked", false), request("GET", "/chunked", true)}
	checkStream(t, "Node http", exchange(t, addr, reqs), []string{"GET", "GET", "GET", "HEAD", "GET"})
}

// Python's http.server answers HTTP/1.0 by default: no Content-Length, the body ends when
// the server closes the connection.
func TestResponseParserFramesAnHTTP10CloseDelimitedBody(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script := `import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Type", "text/plain"); self.end_headers()
        self.wfile.write(b"no length here, read to the end")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()`
	addr := startServerProcess(t, python, "-c", script)
	checkStream(t, "Python http.server", exchange(t, addr, []string{request("GET", "/", false)}), []string{"GET"})
}

// startServerProcess runs a server that prints its port on its first line.
func startServerProcess(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s did not print its port: %v", filepath.Base(name), err)
	}
	return "127.0.0.1:" + strings.TrimSpace(line)
}

// Framing rules beyond what the servers above send, against net/http on the same bytes.
func TestResponseParserFramingTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		stream  string
		methods []string
	}{
		{"chunk extensions and trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n" +
			"HTTP/1.1 204 No Content\r\n\r\n", []string{"GET", "GET"}},
		{"100 Continue before the answer", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", []string{"POST"}},
		{"HEAD with a Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", []string{"HEAD", "GET"}},
		{"304 with a Content-Length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", []string{"GET", "GET"}},
		{"upper-case hex and header names", "HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", []string{"GET"}},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabcHTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nz", []string{"GET", "GET"}},
		{"bare LF line ends", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", []string{"GET"}},
		{"Connection: close with a length", "HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 4\r\n\r\noops", []string{"GET"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkStream(t, c.name, []byte(c.stream), c.methods) })
	}
}

func TestResponseParserRefusesBrokenResponses(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream string
		want   error
	}{
		{"not HTTP", "SSH-2.0-OpenSSH\r\n", errMalformed},
		{"bad status", "HTTP/1.1 2x0 OK\r\n", errMalformed},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", errMalformed},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", errMalformed},
		{"upgrade", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", errUpgrade},
		{"head over 1 MiB", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxHeadBytes), errHeadTooLarge},
	} {
		var p responseParser
		p.reset(false)
		_, err := p.feed([]byte(c.stream))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	var p responseParser
	p.reset(false)
	p.feed([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"))
	if err := p.eof(); !errors.Is(err, errTruncatedBody) {
		t.Errorf("a body cut short by the close: got %v", err)
	}
}

// Arbitrary bytes: the parser never panics, never takes more than it was given, and frames
// the same way however the bytes are split; where net/http reads a whole response from the
// input, the parser agrees on its status.
func FuzzResponseParser(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, b []byte, piece uint8) {
		whole, wholeErr := frameLoose(b, len(b)+1)
		split, splitErr := frameLoose(b, int(piece%16)+1)
		if (wholeErr == nil) != (splitErr == nil) || whole != split {
			t.Fatalf("whole %+v (%v) vs split %+v (%v)", whole, wholeErr, split, splitErr)
		}
		if whole.end > len(b) {
			t.Fatalf("consumed %d of %d bytes", whole.end, len(b))
		}
		resp, err := readFinalResponse(bufio.NewReader(bytes.NewReader(b)), "GET")
		if err == nil && wholeErr == nil && whole.status != 0 {
			if _, berr := io.Copy(io.Discard, resp.Body); berr == nil && resp.StatusCode != whole.status {
				t.Fatalf("status %d, net/http %d", whole.status, resp.StatusCode)
			}
		}
	})
}

// frameLoose frames the first response of b fed in pieces, tolerating an incomplete one.
func frameLoose(b []byte, piece int) (parsed, error) {
	var p responseParser
	p.reset(false)
	var buf []byte
	pos := 0
	for !p.done() && pos < len(b) {
		n := min(piece, len(b)-pos)
		buf = append(buf, b[pos:pos+n]...)
		pos += n
		used, err := p.feed(buf)
		if err != nil {
			return parsed{}, err
		}
		buf = buf[used:]
	}
	if !p.done() && p.eof() != nil {
		return parsed{status: -1}, nil
	}
	return parsed{status: p.status, end: pos - len(buf), close: p.close}, nil
}
