// Package result holds the load generator's output document, which the host agent returns
// and the verdict engine (src/analysis) reads. Change SchemaVersion with any breaking change.
package result

import (
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// SchemaVersion of the Result document.
const SchemaVersion = 1

// Result is one interleaved experiment.
type Result struct {
	SchemaVersion int           `json:"schema_version"`
	Generator     string        `json:"generator"`
	Plan          *plan.Plan    `json:"plan"`
	Seed          int64         `json:"seed"`
	Order         []string      `json:"order"`
	Host          hostinfo.Info `json:"host"`
	Started       time.Time     `json:"started"`
	Ended         time.Time     `json:"ended"`
	Partial       bool          `json:"partial"`
	PartialReason string        `json:"partial_reason,omitempty"`
	Warmup        Warmup        `json:"warmup"`
	Slices        []Slice       `json:"slices"`
}

// Warmup summarises the unrecorded load sent before the first slice.
type Warmup struct {
	Seconds  float64 `json:"seconds"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Errors   int64   `json:"errors"`
	Overflow int64   `json:"overflow"`
}

// Slice is one contiguous window of load against one arm.
type Slice struct {
	Index          int         `json:"index"`
	Pair           int         `json:"pair"`
	Arm            string      `json:"arm"`
	Start          time.Time   `json:"start"`
	End            time.Time   `json:"end"`
	Scheduled      int64       `json:"scheduled"`
	Sent           int64       `json:"sent"`
	Completed      int64       `json:"completed"`
	OK             int64       `json:"ok"`
	Recorded       int64       `json:"recorded"`
	Errors         ErrorCounts `json:"errors"`
	Overflow       int64       `json:"overflow"`
	NewConnections int64       `json:"new_connections"`
	AchievedRPS    float64     `json:"achieved_rps"`
	OKRPS          float64     `json:"ok_rps"`
	LatencyUs      Latency     `json:"latency_us"`
	ServiceTimeUs  Quantiles2  `json:"service_time_us"`
	DispatchLagUs  Quantiles2  `json:"dispatch_lag_us"`
	Histogram      string      `json:"histogram"`
	ShortOfBudget  []string    `json:"short_of_budget"`
	Valid          bool        `json:"valid"`
	InvalidReason  string      `json:"invalid_reason,omitempty"`
}

// ErrorCounts counts failed requests by class.
type ErrorCounts struct {
	Connect int64 `json:"connect"`
	Timeout int64 `json:"timeout"`
	Status4 int64 `json:"4xx"`
	Status5 int64 `json:"5xx"`
	Other   int64 `json:"other"`
}

// Total is the number of failed requests of any class.
func (e ErrorCounts) Total() int64 { return e.Connect + e.Timeout + e.Status4 + e.Status5 + e.Other }

// Latency is the coordinated-omission-corrected latency (completion − intended send).
type Latency struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// Quantiles2 is a median and a p99.
type Quantiles2 struct {
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
}

// SampleBudget is the fewest recorded requests for which a percentile is stable: ten
// requests beyond it (p99 → 1,000; p99.9 → 10,000).
var SampleBudget = []struct {
	Name     string
	Quantile float64
	Min      int64
}{
	{"p99", 99, 1_000},
	{"p999", 99.9, 10_000},
}
