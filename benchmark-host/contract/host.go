package contract

import "time"

// Exit codes of perf-host.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the verb failed, or the run it waited for did
	ExitRefused     = 2 // a bad command, plan, tarball or floor: change the request, do not retry it
	ExitNotFinished = 3 // the run is still going
	ExitBusy        = 4 // another run holds the host past the lock wait
)

// FloorRecord is what `perf-host floor-record RUN-ID` reads on stdin: one A/A calibration.
type FloorRecord struct {
	Workload string  `json:"workload" limit:"name"`
	Rate     float64 `json:"rate" limit:"rate"`
	// The latency percentile the A/A interval was computed at: a verdict at pNN quotes the
	// floor at pNN, never another percentile's.
	Percentile float64 `json:"percentile" limit:"percentile"`
	// The half-width of the A/A interval: the floor.
	HalfWidthMs float64 `json:"half_width_ms" limit:"half_width_ms"`
	// The A/A interval; one that excludes 0 marks the host biased.
	CIMs  [2]float64 `json:"ci_ms"`
	Pairs int        `json:"pairs" limit:"floor_pairs"`
}

// Floor is a recorded calibration: `floors` lists them, `status` gives the latest per
// workload, rate and percentile (see FloorKey).
type Floor struct {
	FloorRecord
	RunID string    `json:"run_id" limit:"run_id"`
	Time  time.Time `json:"time"`
	// Recorded before floors named their percentile: taken to be at LegacyFloorPercentile.
	PercentileAssumed bool `json:"percentile_assumed,omitempty"`
}

// RunSummary is one finished run, as `runs SHA` lists it: the evidence a rerun pools with.
type RunSummary struct {
	RunID         string    `json:"run_id" limit:"run_id"`
	Kind          string    `json:"kind" limit:"kind"`
	Status        string    `json:"status" limit:"run_status"`
	ChampionSHA   string    `json:"champion_sha" limit:"sha"`
	ChallengerSHA string    `json:"challenger_sha" limit:"sha"`
	Workload      string    `json:"workload" limit:"name"`
	Rate          float64   `json:"rate" limit:"rate"`
	Started       time.Time `json:"started"`
	Ended         time.Time `json:"ended"`
}

// Status is what `perf-host status` prints.
type Status struct {
	// The release this perf-host was built from.
	PerfHostVersion string `json:"perf_host_version"`
	// The champion's build; empty before the first promotion.
	Champion string `json:"champion"`
	// When it became the champion here, promoted or rolled back to (RFC 3339): a pool's champion
	// is the one made most recently on any of its hosts (docs/design/0026-a-pool-of-hosts.md).
	// Empty before the first promotion, and for a champion made before perf-host kept the time.
	ChampionSince string `json:"champion_since,omitempty"`
	// The champion a rollback would restore; empty when there is none.
	Previous string `json:"previous"`
	// The champion supervisor is running.
	ChampionSupervised bool `json:"champion_supervised"`
	// The lock's holder; null when the host is free.
	Lock *LockStatus `json:"lock"`
	// The latest floor per workload@rate/pNN (see FloorKey).
	Floors               map[string]Floor `json:"floors"`
	DiskFreeBytes        uint64           `json:"disk_free_bytes"`
	MemoryAvailableBytes uint64           `json:"memory_available_bytes"`
	LoadAvg              [3]float64       `json:"load_avg"`
	// Deployed builds.
	Releases []string `json:"releases"`
	// champion and challenger.
	Ports map[string]int `json:"ports"`
	// How the arms are isolated and placed on this host.
	Isolation *Isolation `json:"isolation,omitempty"`
}

// LockStatus names the holder of the host lock.
type LockStatus struct {
	Holder     string  `json:"holder"`
	Pid        int     `json:"pid"`
	Since      string  `json:"since"`
	AgeSeconds float64 `json:"age_seconds"`
}
