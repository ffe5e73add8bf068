// Package status reports the host's state for `perf-host status`: the champion, the
// releases, the lock, the floors, the isolation and the free disk and memory.
package status

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/floor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/supervisor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

// Read reports the host's state.
func Read(cfg config.Config, st *store.Store, iso *isolation.Lazy, champion *supervisor.Supervisor) (contract.Status, error) {
	state, err := st.LoadState()
	if err != nil {
		return contract.Status{}, err
	}
	s := contract.Status{PerfHostVersion: version.String(), Champion: state.Champion, Previous: store.LastReign(state.History), LoadAvg: hostinfo.LoadAvg(),
		Releases: []string{}, Ports: map[string]int{contract.Champion: cfg.ChampionPort, contract.Challenger: cfg.ChallengerPort}}
	if state.Champion != "" && !state.ChampionSince.IsZero() {
		s.ChampionSince = state.ChampionSince.Format(time.RFC3339Nano)
	}
	s.ChampionSupervised = champion.Supervised()
	// Described, not set up: status starts nothing in the arms, which a run may be using
	// (docs/design/0032-status-starts-nothing-in-the-arms.md).
	s.Isolation = &iso.Describe().Info
	if holder, held := st.CurrentHolder(); held {
		s.Lock = &contract.LockStatus{Holder: holder.What, Pid: holder.Pid, Since: holder.Since.Format(time.RFC3339), AgeSeconds: time.Since(holder.Since).Seconds()}
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(cfg.Root, &fs) == nil {
		s.DiskFreeBytes = fs.Bavail * uint64(fs.Bsize)
	}
	s.MemoryAvailableBytes, _ = hostinfo.MemAvailable()
	s.Floors, _ = floor.Latest(st)
	entries, _ := os.ReadDir(st.Path("releases"))
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			s.Releases = append(s.Releases, e.Name())
		}
	}
	return s, nil
}
