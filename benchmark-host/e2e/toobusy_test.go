package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
)

// The one rule by which an end-to-end test here says "machine too busy" (the TypeScript tests'
// is test/support/machine-too-busy.ts). A measurement the host could not vouch for (other work
// took the CPUs, the load generator fell behind its schedule) failed the machine, not the code:
// a test whose premise is that measurement skips, naming why, rather than asserting on it. It
// may measure again first (untilQuiet), never more than three times in all. Only a test that
// measures (a latency or a CPU cost compared) uses it, and runs alone (the Makefile's
// E2E_ALONE names them); the tests of behaviour do not, and run in parallel (t.Parallel)
// (docs/design/0031-tests-that-measure-run-alone.md).

// lagFloorUs is the dispatch lag past which the verdict calls a slice's load generator behind
// its schedule whatever the slice's latency (LAG_FLOOR_US in src/analysis/health.ts).
const lagFloorUs = 1000

// disturbedSlice says why the host could not vouch for a slice, or "": the host flagged it,
// other work took more CPU than a host allows by default (the tests' hosts raise their limit so
// as not to flag runs whose measurement they do not read), or the generator fell behind.
func disturbedSlice(s contract.Slice) string {
	switch {
	case s.HostDisturbance != "":
		return s.HostDisturbance
	case s.ForeignCPUCores != nil && *s.ForeignCPUCores > config.DefaultMaxForeignCores:
		return fmt.Sprintf("other work took %.2f CPU cores", *s.ForeignCPUCores)
	case s.DispatchLagUs.P99 > lagFloorUs:
		return fmt.Sprintf("the load generator fell %d µs behind at p99", s.DispatchLagUs.P99)
	}
	return ""
}

// tooBusy says why a run's measurement cannot be read, or "": as the verdict's could-not-measure
// rule, when more than half of its pairs hold a disturbed slice.
func tooBusy(r contract.HostResult) string {
	pairs, disturbed := map[int]bool{}, map[int]string{}
	for _, s := range r.Slices {
		pairs[s.Pair] = true
		if why := disturbedSlice(s); why != "" {
			disturbed[s.Pair] = why
		}
	}
	if len(pairs) == 0 || 2*len(disturbed) <= len(pairs) {
		return ""
	}
	var whys []string
	for p, why := range disturbed {
		whys = append(whys, fmt.Sprintf("pair %d: %s", p, why))
	}
	return fmt.Sprintf("%s: %d of %d pairs disturbed (%s)", r.Plan.RunID, len(disturbed), len(pairs), strings.Join(whys[:min(3, len(whys))], "; "))
}

// disturbedOutput is how perf-gate says a run was disturbed, in the CLI's output.
var disturbedOutput = regexp.MustCompile(`could not measure: the (load generator|host) was disturbed[^\n%]*`)

// skipTooBusy skips the test: the machine, not the code, failed its premise.
func skipTooBusy(t *testing.T, why string) {
	t.Helper()
	t.Skipf("machine too busy: %s", why)
}

// untilQuiet measures up to three times while attempt says the machine was too busy (a
// reason), then skips naming every try: a busy spell of a shared VM lasts seconds.
func untilQuiet[T any](t *testing.T, attempt func(n int) (T, string)) T {
	t.Helper()
	var tries []string
	for n := range 3 {
		v, busy := attempt(n)
		if busy == "" {
			return v
		}
		tries = append(tries, fmt.Sprintf("try %d: %s", n+1, busy))
	}
	skipTooBusy(t, "three tries could not measure\n"+strings.Join(tries, "\n"))
	var none T
	return none
}
