// Package toobusy is the one rule by which the Go tests say "machine too busy" (the TypeScript
// tests' is test/support/machine-too-busy.ts; docs/design/0031-tests-that-measure-run-alone.md).
// A measurement the instrument could not vouch for (other work took the CPUs, the load
// generator fell behind its schedule) failed the machine, not the code: a test whose premise is
// that measurement skips, naming why, rather than asserting on it. It may measure again first
// (UntilQuiet), never more than three times in all. Only tests that measure use it; they run
// alone (benchmark-host/Makefile, test-alone).
package toobusy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
)

// LagFloorUs is the dispatch lag past which the verdict calls a slice's load generator behind
// its schedule whatever the slice's latency (LAG_FLOOR_US in src/analysis/health.ts).
const LagFloorUs = 1000

// GeneratorBehind says how far a slice's load generator fell behind its schedule, or "".
func GeneratorBehind(s contract.Slice) string {
	if s.DispatchLagUs.P99 > LagFloorUs {
		return fmt.Sprintf("the load generator fell %d µs behind at p99 in slice %d", s.DispatchLagUs.P99, s.Index)
	}
	return ""
}

// Slice says why the host could not vouch for a slice, or "": the host flagged it, other work
// took more CPU than a host allows by default (the tests' hosts raise their own limit so as not
// to flag runs whose measurement they do not read), or the generator fell behind.
func Slice(s contract.Slice) string {
	switch {
	case s.HostDisturbance != "":
		return s.HostDisturbance
	case s.ForeignCPUCores != nil && *s.ForeignCPUCores > config.DefaultMaxForeignCores:
		return fmt.Sprintf("other work took %.2f CPU cores in slice %d", *s.ForeignCPUCores, s.Index)
	}
	return GeneratorBehind(s)
}

// Result says why a run's measurement cannot be read, or "": as the verdict's could-not-measure
// rule, when more than half of its pairs hold a slice the host could not vouch for.
func Result(r contract.Result) string {
	pairs, disturbed := map[int]bool{}, map[int]string{}
	for _, s := range r.Slices {
		pairs[s.Pair] = true
		if why := Slice(s); why != "" {
			disturbed[s.Pair] = why
		}
	}
	if len(pairs) == 0 || 2*len(disturbed) <= len(pairs) {
		return ""
	}
	var whys []string
	for _, why := range disturbed {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	return fmt.Sprintf("%s: %d of %d pairs disturbed (%s)", r.Plan.RunID, len(disturbed), len(pairs), strings.Join(whys[:min(3, len(whys))], "; "))
}

// disturbedOutput is how perf-gate says a run was disturbed, in the CLI's output (DISTURBED in
// test/support/machine-too-busy.ts).
var disturbedOutput = regexp.MustCompile(`could not measure: the (load generator|host) was disturbed[^\n%]*`)

// Output says why a perf-gate command's output could not vouch for its measurement, or "".
func Output(out []byte) string {
	return string(disturbedOutput.Find(out))
}

// Skip skips the test: the machine, not the code, failed its premise.
func Skip(t testing.TB, why string) {
	t.Helper()
	t.Skipf("machine too busy: %s", why)
}

// UntilQuiet measures up to three times while attempt says the machine was too busy (a
// reason), then skips naming every try: a busy spell of a shared VM lasts seconds.
func UntilQuiet[T any](t testing.TB, attempt func(n int) (T, string)) T {
	t.Helper()
	var tries []string
	for n := range 3 {
		v, busy := attempt(n)
		if busy == "" {
			return v
		}
		tries = append(tries, fmt.Sprintf("try %d: %s", n+1, busy))
	}
	Skip(t, "three tries could not measure\n"+strings.Join(tries, "\n"))
	var none T
	return none
}
