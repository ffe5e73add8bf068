package contract

import "time"

// HistorySchemaVersion is the version of the history's entries and of the document `history`
// prints. A reader refuses a newer one rather than misread it (docs/design/0023-history.md).
const HistorySchemaVersion = 1

// Kinds of history entry.
const (
	HistoryGate        = "gate"        // a finished gate, as its client decided it (gate-record)
	HistoryPromotion   = "promotion"   // a new champion, with the step it took (promote)
	HistoryRollback    = "rollback"    // the previous champion restored (rollback)
	HistoryCalibration = "calibration" // an A/A floor recorded (floor-record)
	HistoryDrift       = "drift"       // the champion measured against an ancestor (drift-record)
)

// Verdicts a gate gives.
const (
	VerdictGreen = "green"
	VerdictRed   = "red"
	VerdictGrey  = "grey"
)

// What main's 30-day change rests on (BudgetAccount.Basis).
const (
	BudgetBasisDrift = "drift"
	BudgetBasisSteps = "steps"
)

// Reasons a comparison blocks.
const (
	BlockedByLatency = "latency"
	BlockedByErrors  = "errors"
	BlockedByCPU     = "cpu"
	// A red within the block threshold that would take main past the monthly regression budget.
	BlockedByBudget = "budget"
)

// GateRecord is what `perf-host gate-record RUN-ID` reads on stdin: a finished gate's verdict
// as its client decided it (the host computes no verdicts), kept in the history.
type GateRecord struct {
	// The pull request the gate measured; left out for a gate of no pull request (perf-gate run).
	PullRequest int `json:"pull_request,omitempty" limit:"pull_request"`
	// The build measured: the pull request's head.
	ChallengerSHA string `json:"challenger_sha" limit:"sha"`
	// The build the champion arm ran: the champion, or the merge base when base says so.
	ChampionSHA string `json:"champion_sha" limit:"sha"`
	Base        string `json:"base" limit:"base"`
	// The gate's verdict over all its comparisons.
	Verdict  string `json:"verdict" limit:"verdict"`
	Blocking bool   `json:"blocking"`
	// The SLO percentile every comparison is at.
	Percentile  float64            `json:"percentile" limit:"percentile"`
	Comparisons []ComparisonRecord `json:"comparisons" limit:"comparisons"`
	// Every run the verdict rests on: the gate's own and the earlier runs of the build it pooled.
	Runs []string `json:"runs" limit:"run_ids"`
	// Where the gate's report is (the workflow run), when known.
	URL string `json:"url,omitempty" limit:"url"`
}

// ComparisonRecord is one workload and rate of a gate.
type ComparisonRecord struct {
	Workload string  `json:"workload" limit:"name"`
	Rate     float64 `json:"rate" limit:"rate"`
	Verdict  string  `json:"verdict" limit:"verdict"`
	Blocking bool    `json:"blocking"`
	// What made it block; empty when it does not.
	BlockedBy []string `json:"blocked_by,omitempty" limit:"blocked_by"`
	// Challenger minus champion at the percentile, and its interval.
	EstimateMs float64    `json:"estimate_ms" limit:"ms"`
	CIMs       [2]float64 `json:"ci_ms" limit:"ms"`
	// The champion arm's latency at the percentile: main's level, the unit of the budget's percents.
	ChampionMs float64 `json:"champion_ms" limit:"level_ms"`
	// The host's A/A floor it was judged against; left out when there was none.
	FloorMs     *float64 `json:"floor_ms,omitempty" limit:"half_width_ms"`
	ThresholdMs float64  `json:"threshold_ms" limit:"half_width_ms"`
	Pairs       int      `json:"pairs" limit:"floor_pairs"`
	// CPU per request and resident memory, challenger against champion in percent; left out when
	// the host measured none.
	CPUPercent *float64 `json:"cpu_percent,omitempty" limit:"percent_change"`
	RSSPercent *float64 `json:"rss_percent,omitempty" limit:"percent_change"`
	// The runs' identity digest: what was measured (docs/design/0003-run-identity.md).
	Identity string `json:"identity,omitempty" limit:"digest"`
	// The monthly regression budget's account at this gate, when the config sets a budget.
	Budget *BudgetAccount `json:"budget,omitempty"`
}

// BudgetAccount is the monthly regression budget as a gate found it, in percent of main's
// level at the percentile (docs/design/0024-regression-budget.md).
type BudgetAccount struct {
	// The config's budget.percent_per_30_days.
	LimitPercent float64 `json:"limit_percent" limit:"budget_percent"`
	// Main's change over the trailing 30 days: the latest drift run's, and the steps since it.
	MainPercent float64 `json:"main_percent" limit:"percent_change"`
	// What main's change rests on: drift, the latest drift run in the window and the steps
	// since; steps, the window's steps alone (no drift run in it, or one whose interval is wider
	// than the budget, which could not tell it).
	Basis string `json:"basis" limit:"budget_basis"`
	// This change.
	ChangePercent float64 `json:"change_percent" limit:"percent_change"`
	// The change is red and would take main past the limit: it blocks.
	Exceeded bool `json:"exceeded"`
}

// DriftRecord is what `perf-host drift-record RUN-ID` reads on stdin: the champion measured
// against an ancestor champion (the run's champion arm) with the interleaved protocol.
type DriftRecord struct {
	Workload   string  `json:"workload" limit:"name"`
	Rate       float64 `json:"rate" limit:"rate"`
	Percentile float64 `json:"percentile" limit:"percentile"`
	// The champion measured (the run's challenger arm).
	ChampionSHA string `json:"champion_sha" limit:"sha"`
	// The ancestor it was measured against (the run's champion arm).
	AncestorSHA string `json:"ancestor_sha" limit:"sha"`
	// Champion minus ancestor at the percentile, and its interval: main's drift since the ancestor.
	EstimateMs float64    `json:"estimate_ms" limit:"ms"`
	CIMs       [2]float64 `json:"ci_ms" limit:"ms"`
	// The ancestor's latency at the percentile: the level the drift is a change of.
	AncestorMs float64 `json:"ancestor_ms" limit:"level_ms"`
	Pairs      int     `json:"pairs" limit:"floor_pairs"`
}

// ChampionChange is a promotion or a rollback, as the host recorded it.
type ChampionChange struct {
	// The champion afterwards.
	SHA string `json:"sha" limit:"sha"`
	// The champion before; left out for the host's first.
	Previous string `json:"previous,omitempty" limit:"sha"`
	// The pull request the promotion merged, when the promotion named one.
	PullRequest int `json:"pull_request,omitempty" limit:"pull_request"`
	// The promoted build's last gate on this host (of the pull request, else of the build): the
	// step main took. Left out when no gate measured it here, and for a rollback.
	Step *Step `json:"step,omitempty"`
}

// Step is the gate a promotion took main by.
type Step struct {
	// When the gate was recorded.
	Gated time.Time  `json:"gated"`
	Gate  GateRecord `json:"gate"`
}

// HistoryEntry is one line of the host's history (history.jsonl): exactly one of gate,
// change, calibration and drift, as its kind says.
type HistoryEntry struct {
	SchemaVersion int       `json:"schema_version" limit:"history_schema_version"`
	Kind          string    `json:"kind" limit:"history_kind"`
	Time          time.Time `json:"time"`
	// The run a gate, a calibration or a drift was recorded from.
	RunID       string          `json:"run_id,omitempty" limit:"run_id"`
	Gate        *GateRecord     `json:"gate,omitempty"`
	Change      *ChampionChange `json:"change,omitempty"`
	Calibration *FloorRecord    `json:"calibration,omitempty"`
	Drift       *DriftRecord    `json:"drift,omitempty"`
}

// Ancestor is a champion whose build the host keeps for drift runs.
type Ancestor struct {
	SHA string `json:"sha" limit:"sha"`
	// When it became the champion.
	Since time.Time `json:"since"`
	// When another took its place; left out for the champion.
	Until *time.Time `json:"until,omitempty"`
}

// History is what `perf-host history` prints: the host's record of main over time.
type History struct {
	SchemaVersion int `json:"schema_version" limit:"history_schema_version"`
	// The host's clock when it was read (the history's "now").
	Time     time.Time `json:"time"`
	Champion string    `json:"champion"`
	// The champions whose builds are kept for drift runs, newest first.
	Ancestors []Ancestor `json:"ancestors"`
	// Oldest first.
	Entries []HistoryEntry `json:"entries"`
	// The most bytes the history keeps; past it, the oldest entries are dropped.
	BoundBytes int64 `json:"bound_bytes" limit:"count"`
	// Entries dropped so far to keep the bound.
	Dropped int64 `json:"dropped" limit:"count"`
}
