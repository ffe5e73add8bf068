package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// The serving path's cost of the packet filter between the arms, measured (never asserted):
// two hosts installed side by side, one with it and one without (--no-net-isolation), and the
// same runs on each in turn: an A/A (the fast build on both arms) and a gate (fast champion,
// slow challenger), ROUNDS times, PAIRS pairs of 0.5 s at 1,000 req/s. It prints each arm's
// median p50 and p99 and the median paired difference at p99 per host, for the README.
//
//	PERF_GATE_NETGUARD_COST=1 flock /tmp/perf-gate-e2e.lock go test ./e2e -run TestNetguardCost -v -timeout 30m
func TestNetguardCost(t *testing.T) {
	if os.Getenv("PERF_GATE_NETGUARD_COST") == "" {
		t.Skip("a measurement, not a test: set PERF_GATE_NETGUARD_COST=1")
	}
	rounds, pairs := envInt("ROUNDS", 3), envInt("PAIRS", 30)
	hosts := map[string]*installedHost{"filter on": crossArmHost(t), "filter off": crossArmHost(t, "--no-net-isolation")}
	type sample struct{ champP50, champP99, chalP50, chalP99, diffP99 []float64 }
	got := map[string]*sample{}
	for round := range rounds {
		for _, mode := range []string{"filter off", "filter on"} {
			h := hosts[mode]
			for _, kind := range []string{"aa", "gate"} {
				variant := "fast"
				if kind == "gate" {
					variant = "slow"
				}
				id := fmt.Sprintf("%s-%d", kind, round)
				sha := fmt.Sprintf("%07x", 0xbe00000+round*2+len(kind))
				h.must(buildTarball(t, variant, "v1", "exec ./service"), "deploy challenger "+sha)
				plan := strings.Replace(strings.Replace(runPlan(sha, pairs, 0.5), `"rate":200`, `"rate":1000`, 1), `"health_timeout_seconds":5`, `"health_timeout_seconds":10`, 1)
				h.must([]byte(plan), "run "+id)
				h.call(nil, "wait "+id)
				var r contract.HostResult
				if err := json.Unmarshal([]byte(h.must(nil, "result "+id)), &r); err != nil {
					t.Fatal(err)
				}
				key := mode + " " + kind
				if got[key] == nil {
					got[key] = &sample{}
				}
				s := got[key]
				byPair := map[int]map[string]contract.Slice{}
				for _, x := range r.Slices {
					if !x.Valid {
						continue
					}
					if byPair[x.Pair] == nil {
						byPair[x.Pair] = map[string]contract.Slice{}
					}
					byPair[x.Pair][x.Arm] = x
					if x.Arm == contract.Champion {
						s.champP50, s.champP99 = append(s.champP50, us(x.LatencyUs.P50)), append(s.champP99, us(x.LatencyUs.P99))
					} else {
						s.chalP50, s.chalP99 = append(s.chalP50, us(x.LatencyUs.P50)), append(s.chalP99, us(x.LatencyUs.P99))
					}
				}
				for _, p := range byPair {
					if a, ok := p[contract.Champion]; ok {
						if b, ok := p[contract.Challenger]; ok {
							s.diffP99 = append(s.diffP99, us(b.LatencyUs.P99-a.LatencyUs.P99))
						}
					}
				}
				t.Logf("%s round %d: %s %s", key, round, r.Outcome.Status, r.Outcome.ErrorKind)
			}
		}
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := got[k]
		t.Logf("%-15s champion p50 %.0f µs p99 %.0f µs; challenger p50 %.0f µs p99 %.0f µs; paired p99 difference median %+.0f µs, IQR [%+.0f, %+.0f] over %d pairs",
			k, median(s.champP50), median(s.champP99), median(s.chalP50), median(s.chalP99), median(s.diffP99), quantile(s.diffP99, 0.25), quantile(s.diffP99, 0.75), len(s.diffP99))
	}
}

func us(v int64) float64 { return float64(v) }

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err != nil || n <= 0 {
		return def
	}
	return n
}
