// Package history keeps the host's record of main over time: every finished gate, promotion,
// rollback, calibration and drift run, one JSON line each, append-only and bounded in size
// (docs/design/0023-history.md). It reads back only what it writes: a line that is not a valid
// entry, one from a newer perf-host, or a file past its bound is refused with the line and why,
// never skipped.
package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// DefaultBoundBytes is the history's default bound: at ~700 bytes a one-comparison gate, about
// 4,500 gates kept (three to four years of a repository's 100 pull requests a month with their
// reruns), read back in a fraction of a second (docs/design/0023-history.md).
const DefaultBoundBytes = 4 << 20

// MaxEntryBytes bounds one line: a gate of 256 comparisons with 1,024 pooled runs fits.
const MaxEntryBytes = 512 << 10

// Store is the history file of a host's root.
type Store struct {
	path  string
	bound int64
	now   Clock
}

// Open is the history kept in dir (history.jsonl, with history.lock beside it), bounded to
// bound bytes (at least four entries' worth), stamped by now.
func Open(dir string, bound int64, now Clock) (*Store, error) {
	if bound < 4*MaxEntryBytes {
		return nil, fmt.Errorf("history: the bound must be at least %d bytes, got %d", 4*MaxEntryBytes, bound)
	}
	return &Store{path: filepath.Join(dir, "history.jsonl"), bound: bound, now: now}, nil
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Bound is the most bytes the file keeps.
func (s *Store) Bound() int64 { return s.bound }

// Append stamps e (schema version and time) and appends it. Past the bound, the oldest entries
// are dropped first, down to three quarters of it, so that a full history costs one rewrite per
// quarter of its size rather than one per entry. It returns the entry as written.
func (s *Store) Append(e contract.HistoryEntry) (contract.HistoryEntry, error) {
	e.SchemaVersion, e.Time = contract.HistorySchemaVersion, s.now().UTC()
	if err := validateEntry(&e); err != nil {
		return e, fmt.Errorf("history: %w", err)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	line = append(line, '\n')
	if len(line) > MaxEntryBytes {
		return e, fmt.Errorf("history: the entry is %d bytes, more than the %d one entry may take", len(line), MaxEntryBytes)
	}
	unlock, err := s.lock()
	if err != nil {
		return e, err
	}
	defer unlock()
	size, err := s.dropTornTail()
	if err != nil {
		return e, fmt.Errorf("history: %w", err)
	}
	if size+int64(len(line)) > s.bound {
		if err := s.compact(); err != nil {
			return e, err
		}
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return e, err
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return e, fmt.Errorf("history: appending: %w", err)
	}
	return e, nil
}

// Read returns every entry, oldest first, and how many the bound has dropped so far.
func (s *Store) Read() ([]contract.HistoryEntry, int64, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return []contract.HistoryEntry{}, s.dropped(), nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	entries, err := s.decode(f)
	return entries, s.dropped(), err
}

// decode reads the whole file, refusing anything this package did not write.
func (s *Store) decode(f *os.File) ([]contract.HistoryEntry, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Appends keep the file within its bound; a larger one was not written by this perf-host.
	if fi.Size() > s.bound {
		return nil, fmt.Errorf("history: %s is %d bytes, past its bound of %d: it was not written by this perf-host (move it aside to start a new history)", s.path, fi.Size(), s.bound)
	}
	entries := []contract.HistoryEntry{}
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if errors.Is(err, errTorn) {
			// An append cut off by a crash: never acknowledged, and dropped by the next one.
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history: %s line %d: %w", s.path, n, err)
		}
		e, err := DecodeEntry(line)
		if err != nil {
			return nil, fmt.Errorf("history: %s line %d: %w (move the file aside to start a new history)", s.path, n, err)
		}
		entries = append(entries, e)
	}
}

var errTorn = errors.New("an incomplete last line")

// readLine reads one line of at most MaxEntryBytes, without its newline.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxEntryBytes {
			return nil, fmt.Errorf("longer than the %d bytes an entry may take", MaxEntryBytes)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, errTorn
		default:
			return nil, err
		}
	}
}

// DecodeEntry reads one entry strictly: an entry of a newer schema is refused as such before
// its fields are read (they may mean something else), an unknown field or a value outside the
// contract's limits is refused naming the field.
func DecodeEntry(line []byte) (contract.HistoryEntry, error) {
	var e contract.HistoryEntry
	var version struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(line, &version); err != nil {
		return e, fmt.Errorf("not valid JSON: %w", err)
	}
	switch {
	case version.SchemaVersion == nil:
		return e, errors.New("schema_version: required")
	case *version.SchemaVersion > contract.HistorySchemaVersion:
		return e, fmt.Errorf("schema_version %d is newer than this perf-host reads (%d): it was written by a newer perf-host; upgrade this one", *version.SchemaVersion, contract.HistorySchemaVersion)
	case *version.SchemaVersion < 1:
		return e, fmt.Errorf("schema_version: must be 1 to %d, got %d", contract.HistorySchemaVersion, *version.SchemaVersion)
	}
	if err := contract.Decode(bytes.NewReader(line), &e); err != nil {
		return e, err
	}
	return e, validateEntry(&e)
}

// compact rewrites the file with its newest entries, at most three quarters of the bound, and
// counts the dropped ones. Under the history's lock.
func (s *Store) compact() error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	// A file that does not read back is never compacted: that would hide it.
	entries, err := s.decode(f)
	f.Close()
	if err != nil {
		return err
	}
	lines := make([][]byte, len(entries))
	var total int64
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		lines[i] = append(b, '\n')
		total += int64(len(lines[i]))
	}
	keepFrom := 0
	for ; keepFrom < len(lines) && total > s.bound*3/4; keepFrom++ {
		total -= int64(len(lines[keepFrom]))
	}
	tmp := s.path + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for _, l := range lines[keepFrom:] {
		w.Write(l)
	}
	err = errors.Join(w.Flush(), out.Sync(), out.Close())
	if err == nil {
		err = s.addDropped(int64(keepFrom))
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("history: keeping it within its bound: %w", err)
	}
	return nil
}

// dropTornTail truncates an incomplete last line (an append cut off by a crash) and returns the
// file's size.
func (s *Store) dropTornTail() (int64, error) {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	size := fi.Size()
	buf := make([]byte, min(size, MaxEntryBytes+1))
	if _, err := f.ReadAt(buf, size-int64(len(buf))); err != nil {
		return 0, err
	}
	if buf[len(buf)-1] == '\n' {
		return size, nil
	}
	cut := bytes.LastIndexByte(buf, '\n')
	if cut < 0 && int64(len(buf)) < size {
		return 0, fmt.Errorf("%s ends in a line longer than %d bytes: it was not written by this perf-host (move it aside to start a new history)", s.path, MaxEntryBytes)
	}
	keep := size - int64(len(buf)) + int64(cut+1)
	return keep, f.Truncate(keep)
}

// The count of dropped entries lives beside the file, written before the compacted file
// replaces the old one: a crash between the two overcounts, never hides a drop.
func (s *Store) droppedPath() string { return s.path + ".dropped" }

func (s *Store) dropped() int64 {
	var n int64
	if b, err := os.ReadFile(s.droppedPath()); err == nil {
		json.Unmarshal(b, &n)
	}
	return max(n, 0)
}

func (s *Store) addDropped(n int64) error {
	return os.WriteFile(s.droppedPath(), fmt.Appendf(nil, "%d\n", s.dropped()+n), 0o600)
}

// lock serialises appends (and the compaction they may cause) across processes.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("history: lock: %w", err)
	}
	return func() { f.Close() }, nil
}
