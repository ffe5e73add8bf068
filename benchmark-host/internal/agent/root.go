// Package agent is the benchmark host: it keeps the champion serving, accepts challengers,
// and runs one experiment at a time. All of its state lives under one root directory.
package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/netguard"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Config is the host's configuration, from perf-host's flags.
type Config struct {
	Root            string
	ChampionUser    string // the champion arm runs as this user
	ChallengerUser  string // the challenger arm runs as this user
	Cgroup          string // the cgroup v2 directory delegated to perf-host ("" = none)
	LoadgenCPUs     string // cpulist for the load generator ("" = anywhere)
	ArmCPUs         string // cpulist both arms share ("" = anywhere)
	ArmMaxProcs     int
	MaxIdleArmCores float64
	MaxRunSeconds   float64
	HoldCPUsAwake   bool // hold PM QoS cpu_dma_latency at 0 while measuring
	ChampionPort    int
	ChallengerPort  int
	ServicePorts    string        // the range the arms' extra ports come from ("" = free ports)
	NetTable        string        // nftables table keeping the arms to their own ports ("" = none)
	ArmDiskBytes    uint64        // size of each arm's own filesystem
	ArmMemoryBytes  int64         // memory.max of each arm's cgroup
	LockWait        time.Duration // how long run/promote wait for a busy host
	DeployLimits    release.Limits
	MinFreeDisk     uint64  // bytes
	MinFreeMemory   uint64  // bytes
	MaxForeignCores float64 // a slice where anything but the run used more CPU cores is disturbed
	SettleSeconds   float64 // how long a run waits for the host to quiet down first
	MaxArmLogBytes  int64   // the most of an arm's log kept per start
	KeepReleases    int
	KeepRuns        int
}

// Host is the agent bound to its root directory.
type Host struct {
	Config
	// Exe is perf-host's own path, for the detached processes it starts.
	Exe string

	isoOnce sync.Once
	iso     *isolation
}

// State is the champion pointer and the service spec it runs with.
type State struct {
	Champion string               `json:"champion,omitempty"`
	Service  contract.ServiceSpec `json:"service"`
	// History holds the earlier champions, oldest first, each with the spec it ran with; a
	// rollback restores the last one and drops it, so a failed promotion leaves no trace.
	History []Reign `json:"history,omitempty"`
	// LegacyPrevious is the one earlier champion a state written before History named;
	// LoadState moves it into History.
	LegacyPrevious string    `json:"previous,omitempty"`
	Updated        time.Time `json:"updated"`
}

// Reign is one earlier champion.
type Reign struct {
	SHA     string               `json:"sha"`
	Service contract.ServiceSpec `json:"service"`
}

// MaxHistory bounds the champions kept for rollback (their releases are never pruned).
const MaxHistory = 5

// lastReign is the champion a rollback would restore, or "".
func lastReign(history []Reign) string {
	if len(history) == 0 {
		return ""
	}
	return history[len(history)-1].SHA
}

// protected reports whether sha is the champion or one a rollback may restore.
func (s State) protected(sha string) bool {
	if sha == s.Champion {
		return true
	}
	for _, r := range s.History {
		if r.SHA == sha {
			return true
		}
	}
	return false
}

func (h *Host) path(parts ...string) string {
	return filepath.Join(append([]string{h.Root}, parts...)...)
}

func (h *Host) releaseDir(sha string) string { return h.path("releases", sha) }
func (h *Host) runDir(id string) string      { return h.path("runs", id) }

// armLog is an arm's log under the root, capped at --max-arm-log-bytes.
func (h *Host) armLog(parts ...string) service.Log {
	return service.Log{Path: h.path(parts...), MaxBytes: h.MaxArmLogBytes}
}

// Init creates the root layout; it is idempotent. The host's state is the CI user's alone:
// the root can be traversed (0711) so that each arm reaches its own home under arms/, and
// everything else in it is private (0700 directories, 0600 files). A root laid out before the
// arms had users of their own is tightened here.
func (h *Host) Init() error {
	if _, err := service.ParsePortRange(h.ServicePorts); err != nil {
		return err
	}
	if err := netguard.ValidTable(h.NetTable); err != nil {
		return err
	}
	if err := os.MkdirAll(h.Root, 0o711); err != nil {
		return fmt.Errorf("root %s: %w", h.Root, err)
	}
	for _, d := range []string{"releases", "runs", "logs"} {
		if err := os.MkdirAll(h.path(d), 0o700); err != nil {
			return fmt.Errorf("root %s: %w", h.Root, err)
		}
	}
	if err := os.MkdirAll(h.path("arms"), 0o711); err != nil {
		return fmt.Errorf("root %s: %w", h.Root, err)
	}
	tighten(h.Root, 0o711)
	entries, _ := os.ReadDir(h.Root)
	for _, e := range entries {
		switch {
		case e.Name() == "arms":
			tighten(h.path("arms"), 0o711)
		case e.IsDir():
			tighten(h.path(e.Name()), 0o700)
		case e.Type().IsRegular():
			tighten(h.path(e.Name()), 0o600)
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

// LoadState reads the champion pointer; a missing file is the empty state.
func (h *Host) LoadState() (State, error) {
	var s State
	err := readJSON(h.path("state.json"), &s)
	if os.IsNotExist(err) {
		return s, nil
	}
	service.FillDefaults(&s.Service)
	for i := range s.History {
		service.FillDefaults(&s.History[i].Service)
	}
	if len(s.History) == 0 && s.LegacyPrevious != "" {
		// A state written before champions were kept as a history: its previous champion ran
		// with the only spec it recorded.
		s.History = []Reign{{SHA: s.LegacyPrevious, Service: s.Service}}
		s.LegacyPrevious = ""
	}
	return s, err
}

func (h *Host) saveState(s State) error {
	s.Updated = time.Now().UTC()
	return writeJSONAtomic(h.path("state.json"), s)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSONAtomic writes via a temporary file and rename, so readers never see half a file;
// a failed write (a full disk) leaves the old file and no temporary behind, and is returned.
func writeJSONAtomic(path string, v any) error {
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

// RefusedError is a request the host will not carry out as sent (a bad plan, a hostile
// tarball, a bad floor): the caller must change the request, not retry it.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

func refuse(format string, args ...any) error {
	return &RefusedError{Err: fmt.Errorf(format, args...)}
}

// Audit appends who asked what, and when, to audit.log.
func (h *Host) Audit(client, command, outcome string) {
	f, err := os.OpenFile(h.path("audit.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]string{
		"time": time.Now().UTC().Format(time.RFC3339Nano), "client": client, "command": command, "outcome": outcome,
	})
	f.Write(append(line, '\n'))
}
