package loadgen

import (
	"bytes"
	"errors"
)

// responseParser reads one HTTP/1.1 response at a time from a connection's bytes, without
// allocating: status line, headers (only the framing ones are looked at), and a body framed
// by Content-Length, chunked transfer coding or the connection's close. Interim 1xx
// responses are skipped. The body is counted and discarded.
type responseParser struct {
	state      parseState
	head       bool // the request was HEAD: the response has no body
	status     int
	http10     bool
	close      bool  // the connection ends after this response
	chunked    bool  // Transfer-Encoding ends in chunked
	length     int64 // Content-Length, -1 when absent
	remaining  int64 // body or chunk bytes still to skip
	headerSeen int   // bytes of the current head, bounded by maxHeadBytes
}

type parseState uint8

const (
	stStatus parseState = iota
	stHeader
	stBody       // remaining bytes of a Content-Length body
	stUntilClose // a body that ends when the server closes
	stChunkSize
	stChunkData
	stChunkCRLF
	stTrailer
	stDone
)

// maxHeadBytes bounds a response head (as Go's net/http does by default: 1 MiB).
const maxHeadBytes = 1 << 20

var (
	errMalformed     = errors.New("malformed HTTP response")
	errHeadTooLarge  = errors.New("HTTP response head over 1 MiB")
	errUpgrade       = errors.New("HTTP 101 Switching Protocols is not supported")
	errTruncatedBody = errors.New("connection closed before the response ended")
)

// reset prepares for the response to the next request.
func (p *responseParser) reset(head bool) {
	*p = responseParser{head: head, length: -1}
}

// done reports whether a whole response has been read.
func (p *responseParser) done() bool { return p.state == stDone }

// feed consumes bytes of b and returns how many; fewer than len(b) when a line is incomplete
// (the caller keeps the rest and calls again with more) or the response ended (the rest is
// bytes the server sent unasked).
func (p *responseParser) feed(b []byte) (int, error) {
	n := 0
	for n < len(b) && p.state != stDone {
		switch p.state {
		case stBody, stChunkData:
			skip := min(int64(len(b)-n), p.remaining)
			n += int(skip)
			p.remaining -= skip
			if p.remaining == 0 {
				if p.state == stBody {
					p.state = stDone
				} else {
					p.state = stChunkCRLF
				}
			}
		case stUntilClose:
			n = len(b)
		default:
			i := bytes.IndexByte(b[n:], '\n')
			if i < 0 {
				if p.headerSeen+len(b)-n > maxHeadBytes {
					return n, errHeadTooLarge
				}
				return n, nil
			}
			line := b[n : n+i]
			p.headerSeen += i + 1
			if p.headerSeen > maxHeadBytes {
				return n, errHeadTooLarge
			}
			n += i + 1
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			if err := p.line(line); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// eof tells the parser the server closed the connection; it reports whether that ended the
// response well (a close-delimited body) or cut it short.
func (p *responseParser) eof() error {
	if p.state == stUntilClose {
		p.state = stDone
		return nil
	}
	if p.state == stDone {
		return nil
	}
	return errTruncatedBody
}

func (p *responseParser) line(line []byte) error {
	switch p.state {
	case stStatus:
		return p.statusLine(line)
	case stHeader:
		if len(line) == 0 {
			return p.endOfHead()
		}
		return p.header(line)
	case stChunkSize:
		size, ok := parseChunkSize(line)
		if !ok {
			return errMalformed
		}
		if size == 0 {
			p.state = stTrailer
		} else {
			p.state, p.remaining = stChunkData, size
		}
	case stChunkCRLF:
		if len(line) != 0 {
			return errMalformed
		}
		p.state = stChunkSize
	case stTrailer:
		if len(line) == 0 {
			p.state = stDone
		}
	}
	return nil
}

// statusLine parses "HTTP/1.x SSS reason".
func (p *responseParser) statusLine(line []byte) error {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || (line[7] != '0' && line[7] != '1') ||
		line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return errMalformed
	}
	status := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return errMalformed
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return errMalformed
	}
	p.status, p.http10 = status, line[7] == '0'
	p.close = p.http10 // HTTP/1.0 closes unless it says keep-alive
	p.state = stHeader
	return nil
}

func (p *responseParser) header(line []byte) error {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return errMalformed
	}
	name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
	switch {
	case equalFold(name, "content-length"):
		n, ok := parseDecimal(value)
		if !ok || (p.length >= 0 && p.length != n) {
			return errMalformed
		}
		p.length = n
	case equalFold(name, "transfer-encoding") && !p.http10:
		// HTTP/1.0 has no transfer codings (net/http ignores them too). The last coding decides the framing (RFC 9112 §6.3); only chunked is understood.
		last := value
		if i := bytes.LastIndexByte(value, ','); i >= 0 {
			last = bytes.TrimSpace(value[i+1:])
		}
		p.chunked = equalFold(last, "chunked")
		if !p.chunked {
			p.close = true // a body of another coding ends at close
		}
	case equalFold(name, "connection"):
		for _, tok := range bytes.Split(value, []byte(",")) {
			tok = bytes.TrimSpace(tok)
			if equalFold(tok, "close") {
				p.close = true
			} else if equalFold(tok, "keep-alive") && p.http10 {
				p.close = false
			}
		}
	}
	return nil
}

func (p *responseParser) endOfHead() error {
	switch {
	case p.status == 101:
		return errUpgrade
	case p.status < 200:
		// An interim response (100 Continue, 103 Early Hints): the final one follows.
		head := p.head
		p.reset(head)
		return nil
	case p.head || p.status == 204 || p.status == 304:
		p.state = stDone
	case p.chunked:
		p.state = stChunkSize
	case p.length > 0:
		p.state, p.remaining = stBody, p.length
	case p.length == 0:
		p.state = stDone
	default:
		p.state, p.close = stUntilClose, true
	}
	p.headerSeen = 0
	return nil
}

// parseChunkSize reads the hex size before any chunk extension.
func parseChunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range line {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// equalFold compares ASCII case-insensitively against a lower-case name.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
