package history

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// FieldError is a record that is not what the contract says, naming the field.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func field(name string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: name, Err: err}
}

// ValidateGate checks a gate record against the contract's limits and against itself: the
// verdict is the one its comparisons give, and each interval holds its estimate.
func ValidateGate(g *contract.GateRecord) error {
	if err := cmp.Or(
		optional("pull_request", g.PullRequest, contract.PullRequest),
		field("challenger_sha", contract.SHA.Check(g.ChallengerSHA)),
		field("champion_sha", contract.SHA.Check(g.ChampionSHA)),
		field("base", contract.Bases.Check(g.Base)),
		field("verdict", contract.Verdicts.Check(g.Verdict)),
		field("percentile", contract.Percentile.Check(g.Percentile)),
		field("comparisons", contract.Comparisons.Check(len(g.Comparisons))),
		field("runs", contract.AtLeastOne.Check(len(g.Runs))),
		field("runs", contract.RunIDs.Check(g.Runs)),
	); err != nil {
		return err
	}
	if g.URL != "" {
		if err := field("url", contract.URL.Check(g.URL)); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	verdict, blocking := contract.VerdictGrey, false
	for i, c := range g.Comparisons {
		if err := validateComparison(fmt.Sprintf("comparisons[%d]", i), &c); err != nil {
			return err
		}
		key := contract.Key(c.Workload, c.Rate)
		if j, ok := seen[key]; ok {
			return field(fmt.Sprintf("comparisons[%d]", i), fmt.Errorf("%s is also comparisons[%d]", key, j))
		}
		seen[key] = i
		blocking = blocking || c.Blocking
		if c.Verdict == contract.VerdictRed || c.Verdict == contract.VerdictGreen && verdict == contract.VerdictGrey {
			verdict = c.Verdict
		}
	}
	if g.Verdict != verdict {
		return field("verdict", fmt.Errorf("%q, but the comparisons give %q (red if any is red, else green if any is green)", g.Verdict, verdict))
	}
	if g.Blocking != blocking {
		return field("blocking", fmt.Errorf("%v, but %s of the comparisons blocks", g.Blocking, map[bool]string{true: "one", false: "none"}[blocking]))
	}
	return nil
}

func validateComparison(at string, c *contract.ComparisonRecord) error {
	f := func(name string, err error) error { return field(at+"."+name, err) }
	err := cmp.Or(
		f("workload", contract.Name.Check(c.Workload)),
		f("rate", contract.Rate.Check(c.Rate)),
		f("verdict", contract.Verdicts.Check(c.Verdict)),
		f("estimate_ms", contract.Ms.Check(c.EstimateMs)),
		f("ci_ms", interval(c.CIMs, c.EstimateMs)),
		f("champion_ms", contract.LevelMs.Check(c.ChampionMs)),
		f("estimate_ms", keepsALatency(c.EstimateMs, c.ChampionMs, "champion_ms")),
		f("threshold_ms", contract.HalfWidthMs.Check(c.ThresholdMs)),
		f("pairs", contract.FloorPairs.Check(float64(c.Pairs))),
		f("floor_ms", optionalNumber(c.FloorMs, contract.HalfWidthMs)),
		f("cpu_percent", optionalNumber(c.CPUPercent, contract.PercentChange)),
		f("rss_percent", optionalNumber(c.RSSPercent, contract.PercentChange)),
	)
	if err != nil {
		return err
	}
	if c.Identity != "" {
		if err := f("identity", contract.SHA256.Check(c.Identity)); err != nil {
			return err
		}
	}
	reasons := map[string]bool{}
	for i, r := range c.BlockedBy {
		if err := contract.BlockReasons.Check(r); err != nil {
			return f(fmt.Sprintf("blocked_by[%d]", i), err)
		}
		if reasons[r] {
			return f(fmt.Sprintf("blocked_by[%d]", i), fmt.Errorf("%q is named twice", r))
		}
		reasons[r] = true
	}
	switch {
	case c.Blocking != (len(c.BlockedBy) > 0):
		return f("blocking", fmt.Errorf("%v, but blocked_by names %d reasons: a comparison blocks exactly when it names why", c.Blocking, len(c.BlockedBy)))
	case c.Blocking && c.Verdict != contract.VerdictRed:
		return f("verdict", fmt.Errorf("%q, but a blocking comparison is red", c.Verdict))
	}
	if c.Budget != nil {
		b := c.Budget
		if err := cmp.Or(
			f("budget.limit_percent", contract.BudgetPercent.Check(b.LimitPercent)),
			f("budget.main_percent", contract.PercentChange.Check(b.MainPercent)),
			f("budget.change_percent", contract.PercentChange.Check(b.ChangePercent)),
			f("budget.basis", contract.BudgetBases.Check(b.Basis)),
		); err != nil {
			return err
		}
		if b.Exceeded && !reasons[contract.BlockedByBudget] {
			return f("blocked_by", errors.New("the budget is exceeded, so it names \"budget\""))
		}
	} else if reasons[contract.BlockedByBudget] {
		return f("budget", errors.New("required when blocked_by names \"budget\""))
	}
	return nil
}

// ValidateDrift checks a drift record against the contract's limits.
func ValidateDrift(d *contract.DriftRecord) error {
	return cmp.Or(
		field("workload", contract.Name.Check(d.Workload)),
		field("rate", contract.Rate.Check(d.Rate)),
		field("percentile", contract.Percentile.Check(d.Percentile)),
		field("champion_sha", contract.SHA.Check(d.ChampionSHA)),
		field("ancestor_sha", contract.SHA.Check(d.AncestorSHA)),
		field("estimate_ms", contract.Ms.Check(d.EstimateMs)),
		field("ci_ms", interval(d.CIMs, d.EstimateMs)),
		field("ancestor_ms", contract.LevelMs.Check(d.AncestorMs)),
		field("estimate_ms", keepsALatency(d.EstimateMs, d.AncestorMs, "ancestor_ms")),
		field("pairs", contract.FloorPairs.Check(float64(d.Pairs))),
	)
}

// keepsALatency refuses a change of -100% or less: it leaves the level no latency at all, which
// no measurement reads, and main's steps, which compound, could not be undone
// (docs/design/0024-regression-budget.md).
func keepsALatency(estimateMs, levelMs float64, level string) error {
	if levelMs+estimateMs <= 0 {
		return fmt.Errorf("%v takes the %s %v ms to no latency (at most 0 ms)", estimateMs, level, levelMs)
	}
	return nil
}

// validateEntry checks an entry read back: its kind, the one record that kind carries, and that
// record.
func validateEntry(e *contract.HistoryEntry) error {
	if err := field("kind", contract.HistoryKinds.Check(e.Kind)); err != nil {
		return err
	}
	if e.Time.IsZero() {
		return field("time", errors.New("required"))
	}
	if e.RunID != "" {
		if err := field("run_id", contract.RunID.Check(e.RunID)); err != nil {
			return err
		}
	}
	carried := map[string]bool{"gate": e.Gate != nil, "change": e.Change != nil, "calibration": e.Calibration != nil, "drift": e.Drift != nil}
	want := map[string]string{
		contract.HistoryGate: "gate", contract.HistoryPromotion: "change", contract.HistoryRollback: "change",
		contract.HistoryCalibration: "calibration", contract.HistoryDrift: "drift",
	}[e.Kind]
	for name, has := range carried {
		if has != (name == want) {
			return field(name, fmt.Errorf("a %s entry carries %s and nothing else", e.Kind, want))
		}
	}
	switch {
	case e.Gate != nil:
		return prefixed("gate", ValidateGate(e.Gate))
	case e.Drift != nil:
		return prefixed("drift", ValidateDrift(e.Drift))
	case e.Calibration != nil:
		c := e.Calibration
		return prefixed("calibration", cmp.Or(
			field("workload", contract.Name.Check(c.Workload)),
			field("rate", contract.Rate.Check(c.Rate)),
			field("percentile", contract.Percentile.Check(c.Percentile)),
			field("half_width_ms", contract.HalfWidthMs.Check(c.HalfWidthMs)),
			field("pairs", contract.FloorPairs.Check(float64(c.Pairs))),
		))
	}
	c := e.Change
	err := field("sha", contract.SHA.Check(c.SHA))
	if err == nil && c.Previous != "" {
		err = field("previous", contract.SHA.Check(c.Previous))
	}
	if err == nil {
		err = optional("pull_request", c.PullRequest, contract.PullRequest)
	}
	if err == nil && c.Step != nil {
		err = prefixed("step.gate", ValidateGate(&c.Step.Gate))
	}
	return prefixed("change", err)
}

func prefixed(at string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: at + "." + fe.Field, Err: fe.Err}
	}
	return err
}

// optional checks a number a record may leave out (0).
func optional(name string, v int, r contract.Range) error {
	if v == 0 {
		return nil
	}
	return field(name, r.Check(float64(v)))
}

func optionalNumber(v *float64, r contract.Range) error {
	if v == nil {
		return nil
	}
	return r.Check(*v)
}

// interval checks an interval's ends and that it holds its estimate (the estimator's intervals
// are centred on it).
func interval(ci [2]float64, estimate float64) error {
	for _, v := range ci {
		if err := contract.Ms.Check(v); err != nil {
			return err
		}
	}
	// A rounding's slack: the client may print fewer digits than it computed with.
	slack := 1e-9 * math.Max(1, math.Abs(estimate))
	if ci[0] > ci[1] || estimate < ci[0]-slack || estimate > ci[1]+slack {
		return fmt.Errorf("must be [low, high] around the estimate %v, got [%v, %v]", estimate, ci[0], ci[1])
	}
	return nil
}
