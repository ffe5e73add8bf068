// Package store is the benchmark host's state on disk: one root directory holding the
// champion pointer (state.json), the host lock, the deployed releases, the runs' records and
// the audit log. Everything the host keeps between two perf-host processes lives here; what
// the files mean to a run, a supervisor or a promotion is theirs.
package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Store is the host's root directory.
type Store struct {
	Root string
}

// New is the store at root; Init lays it out.
func New(root string) *Store { return &Store{Root: root} }

// Path is a path under the root.
func (s *Store) Path(parts ...string) string {
	return filepath.Join(append([]string{s.Root}, parts...)...)
}

// ReleaseDir is where a deployed build lives.
func (s *Store) ReleaseDir(sha string) string { return s.Path("releases", sha) }

// RunDir is where a run's records live.
func (s *Store) RunDir(id string) string { return s.Path("runs", id) }

// Init creates the root layout; it is idempotent. The host's state is the CI user's alone:
// the root can be traversed (0711) so that each arm reaches its own home under arms/, and
// everything else in it is private (0700 directories, 0600 files). A root laid out before the
// arms had users of their own is tightened here.
func (s *Store) Init() error {
	if err := os.MkdirAll(s.Root, 0o711); err != nil {
		return fmt.Errorf("root %s: %w", s.Root, err)
	}
	for _, d := range []string{"releases", "runs", "logs"} {
		if err := os.MkdirAll(s.Path(d), 0o700); err != nil {
			return fmt.Errorf("root %s: %w", s.Root, err)
		}
	}
	if err := os.MkdirAll(s.Path("arms"), 0o711); err != nil {
		return fmt.Errorf("root %s: %w", s.Root, err)
	}
	tighten(s.Root, 0o711)
	entries, _ := os.ReadDir(s.Root)
	for _, e := range entries {
		switch {
		case e.Name() == "arms":
			tighten(s.Path("arms"), 0o711)
		case e.IsDir():
			tighten(s.Path(e.Name()), 0o700)
		case e.Type().IsRegular():
			tighten(s.Path(e.Name()), 0o600)
		}
	}
	return nil
}

// tighten sets a path's mode when it differs and the path is ours (errors are ignored: a path
// of another owner is left as it is).
func tighten(path string, mode os.FileMode) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Perm() != mode {
		os.Chmod(path, mode)
	}
}

// ReadJSON reads a JSON file into v; a missing file is the os.IsNotExist error.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteJSONAtomic writes via a temporary file and rename, so readers never see half a file;
// a failed write (a full disk) leaves the old file and no temporary behind, and is returned.
func WriteJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
