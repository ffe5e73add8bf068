package service

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Log is where an arm's process writes its output: a file that keeps at most MaxBytes of it,
// its first half and its last half, and says how much was cut between them, so that a chatty
// service cannot fill the host's disk while a report can still show how it started and how it
// ended (docs/design/0005-bounded-arm-logs.md).
type Log struct {
	Path     string
	MaxBytes int64 // 0: no cap
}

// DefaultMaxLogBytes is the cap of one arm's log per run when the host sets none.
const DefaultMaxLogBytes = 8 << 20

// tailChunks is how many files the kept end of a capped log rotates through: the last one
// being written and the full one before it.
const tailChunks = 2

// LogWriter is a running capped log: the process writes into W (a pipe); a goroutine moves
// the bytes into the file, and done is closed once every writer has closed the pipe and the
// file holds the whole kept log.
type LogWriter struct {
	W    *os.File
	done chan struct{}
}

// Wait waits, up to timeout, until the log holds everything written to it.
func (lw *LogWriter) Wait(timeout time.Duration) {
	select {
	case <-lw.done:
	case <-time.After(timeout):
	}
}

// Open starts the capped log and writes header first; the caller hands W to the process and
// closes it once the process has started.
func (l Log) Open(header string) (*LogWriter, error) {
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	io.WriteString(f, header)
	if l.MaxBytes <= 0 {
		return &LogWriter{W: f, done: closedChan()}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	lw := &LogWriter{W: w, done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		defer f.Close()
		defer r.Close()
		l.copy(f, r)
	}()
	return lw, nil
}

// copy moves r into f: the first half of the cap straight into f, the rest through numbered
// tail files of which the last two are kept, the full one and the one being written: the
// log's end. io.Copy between files splices in the kernel: the host's CPU does not pay for a
// chatty service's output byte by byte.
func (l Log) copy(f *os.File, r io.Reader) {
	// The head is what the file may hold before the tail starts, a setup's output included.
	head := l.MaxBytes / 2
	if st, err := f.Stat(); err == nil {
		head = max(0, head-st.Size())
	}
	if n, _ := io.CopyN(f, r, head); n < head {
		return
	}
	chunk := max(1, (l.MaxBytes-l.MaxBytes/2)/tailChunks)
	var total int64
	for k := 0; ; k++ {
		c, err := os.OpenFile(l.chunk(k), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			break
		}
		os.Remove(l.chunk(k - tailChunks))
		m, err := io.CopyN(c, r, chunk)
		c.Close()
		total += m
		if err != nil || m < chunk {
			break
		}
	}
	// Drain whatever a failure above left, so that the process never blocks on a full pipe.
	total += must(io.Copy(io.Discard, r))
	ends := l.chunks()
	var kept int64
	for _, p := range ends {
		if st, err := os.Stat(p); err == nil {
			kept += st.Size()
		}
	}
	if cut := total - kept; cut > 0 {
		fmt.Fprintf(f, "\n%s%d bytes of this log cut here (it keeps its first %d and last %d bytes; the host's --max-arm-log-bytes is %d)\n", cutMarker, cut, l.MaxBytes/2, kept, l.MaxBytes)
	}
	for _, p := range ends {
		if c, err := os.Open(p); err == nil {
			io.Copy(f, c)
			c.Close()
		}
		os.Remove(p)
	}
}

// cutMarker starts the line a capped log says its cut on.
const cutMarker = "--- perf-host: "

func (l Log) chunk(k int) string { return fmt.Sprintf("%s.tail.%d", l.Path, k) }

// chunks are the tail files that exist, in the order they were written.
func (l Log) chunks() []string {
	paths, _ := filepath.Glob(l.Path + ".tail.*")
	seq := func(p string) int {
		k, _ := strconv.Atoi(p[len(l.Path)+len(".tail."):])
		return k
	}
	slices.SortFunc(paths, func(a, b string) int { return seq(a) - seq(b) })
	return paths
}

func must(n int64, _ error) int64 { return n }

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Cut is how many bytes of the log were cut, from its marker line; 0 when none.
func (l Log) Cut() int64 {
	b, err := os.ReadFile(l.Path)
	if err != nil {
		return 0
	}
	i := bytes.LastIndex(b, []byte("\n"+cutMarker))
	if i < 0 {
		return 0
	}
	var cut int64
	if _, err := fmt.Sscanf(string(b[i+1+len(cutMarker):]), "%d bytes of this log cut here", &cut); err != nil {
		return 0
	}
	return cut
}

// LogTail returns the last lines of a log file, at most 4 KiB, counting the tail files of a
// capped log that is still being written.
func LogTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	for _, p := range (Log{Path: path}).chunks() {
		if c, err := os.ReadFile(p); err == nil {
			b = append(b, c...)
		}
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	all := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(b, []byte("?"))), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
