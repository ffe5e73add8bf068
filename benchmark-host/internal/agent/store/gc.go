package store

import (
	"os"
	"sort"
	"strings"
	"time"
)

// GC prunes old releases and runs under the host lock (waiting up to lockWait); the champion,
// the earlier champions a rollback may restore, and the newest keepReleases releases and
// keepRuns runs stay.
func (s *Store) GC(keepReleases, keepRuns int, lockWait time.Duration) ([]string, error) {
	lock, err := s.Acquire("gc", lockWait)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	st, err := s.LoadState()
	if err != nil {
		return nil, err
	}
	removed := s.prune("releases", keepReleases, st.Protected)
	return append(removed, s.prune("runs", keepRuns, func(string) bool { return false })...), nil
}

// prune removes the entries of dir past the newest keep, but never a protected one.
func (s *Store) prune(dir string, keep int, protect func(string) bool) []string {
	entries, _ := os.ReadDir(s.Path(dir))
	type aged struct {
		name string
		mod  time.Time
	}
	var list []aged
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() {
			list = append(list, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].mod.After(list[j].mod) })
	var removed []string
	for i, a := range list {
		if (i < keep && !strings.HasPrefix(a.name, ".")) || protect(a.name) {
			continue
		}
		os.RemoveAll(s.Path(dir, a.name))
		os.Remove(s.Path(dir, a.name) + ".json")
		removed = append(removed, dir+"/"+a.name)
	}
	return removed
}
