package contract

import (
	"math"
	"strconv"
)

// Key names a comparison, a floor and a run's place in the evidence: "workload@rate", with
// the rate as its shortest decimal and never an exponent (1000000, not 1e+06). The
// TypeScript side's comparisonKey must agree: both are checked against testdata/keys.json.
func Key(workload string, rate float64) string {
	return workload + "@" + strconv.FormatFloat(rate, 'f', -1, 64)
}

// FloorKey names a floor: its comparison's Key and the percentile it was measured at,
// "workload@rate/pNN" (checkout@1000/p99). The TypeScript side's floorKey must agree: both are
// checked against testdata/floor-keys.json.
func FloorKey(workload string, rate, percentile float64) string {
	return Key(workload, rate) + "/p" + strconv.FormatFloat(percentile, 'f', -1, 64)
}

// LegacyFloorPercentile is the percentile a floor recorded before floors named one is taken to
// be at: such a floor was measured at the SLO percentile of its day, which the host never knew;
// p99 is the SLO percentile a config has unless it sets another. A verdict at another
// percentile finds no floor rather than a wrong one, and reports say the percentile was assumed.
const LegacyFloorPercentile = 99

// SampleBudget is the fewest recorded requests a slice's percentile is read from: three
// requests beyond it (p99 → 300; p99.9 → 3,000). The sensitivity benchmark
// (docs/design/0012-slice-design.md) measured slices of 1,300, 550 and 300 recorded requests at the
// same 90 s of a gate: the shortest, with the most pairs, was the most sensitive (the host's slow
// spells last seconds, and short adjacent slices share them), with the A/A false-label rate
// unchanged. The TypeScript side computes the same formula (and sizes default slices by it); both
// are checked against testdata/sample-budget.json.
func SampleBudget(percentile float64) int64 {
	// Rounded to a millionth first: in floating point 3/(1−0.999) is 3000.0000000003, and the
	// ceiling of that would ask for 3,001.
	exact := 3 / (1 - percentile/100)
	return int64(math.Ceil(math.Round(exact*1e6) / 1e6))
}

// BudgetedPercentiles are the named percentiles a slice reports as short of budget.
var BudgetedPercentiles = []struct {
	Name       string
	Percentile float64
}{{"p99", 99}, {"p999", 99.9}}
