package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hashCPU is the CPU time one request's hashing takes (the example service's HASH_ROUNDS
// rounds of SHA-256 over a 32-byte digest), measured on this thread in this process: an
// independent reference for what the host reads from the service's cgroup.
func hashCPU(rounds int) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const reps = 50
	var before, after syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &before)
	sum := sha256.Sum256([]byte("key"))
	for range reps {
		for range rounds {
			sum = sha256.Sum256(sum[:])
		}
	}
	syscall.Getrusage(1, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / reps
	if sum[0] == 0 && sum[1] == 0 {
		cpu++ // keep the loop
	}
	return cpu
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// CPU per request is read from the arms' cgroups per slice. Against a champion that does no
// hashing, a challenger doing W rounds of SHA-256 per request and one doing 2W read CPU per
// request beyond the champion's in the ratio of their work: about 2. (The raw ratio of the two
// builds' CPU per request is lower, as each request also costs what HTTP and the Go runtime
// take; the champion's slices measure that.) The extra CPU is also checked against the
// hashing's CPU time measured here, independently, but loosely: on a shared two-vCPU machine
// the same work costs more CPU time when the sibling hyperthread is busy.
func TestCPUPerRequestFollowsTheWorkPerRequest(t *testing.T) {
	h := newHost(t, hostOptions{})
	if h.Cgroup == "" {
		t.Skip("no cgroup v2 here")
	}
	// About 2 ms of hashing per request at W rounds.
	perRound := hashCPU(20_000) / 20_000
	rounds := int(2 * time.Millisecond / max(perRound, time.Nanosecond))
	work := hashCPU(rounds)
	t.Logf("%d rounds of SHA-256 take %v of CPU here", rounds, work)
	spec := func(r int) string {
		return fmt.Sprintf(`{"command":["./start.sh"],"env":{"HASH_ROUNDS":"%d"},"health_timeout_seconds":10}`, r)
	}
	h.must(bytes.NewReader(buildTarball(t, "fast", "v1", "exec ./service")), "deploy champion aaaaaaa")
	h.must(strings.NewReader(spec(0)), "promote aaaaaaa")
	h.must(bytes.NewReader(buildTarball(t, "fast", "v2", "exec ./service")), "deploy challenger bbbbbbb")
	// extra is the challenger's CPU per request beyond the champion's, median over the pairs.
	extra := func(id string, r int) (champion, challenger, d float64) {
		plan := fmt.Sprintf(`{"challenger_sha":"bbbbbbb","service":%s,"loadgen":{"workload":"work","rate":50,"slice_seconds":1,"pairs":3,"seed":1,"warmup_seconds":0.5,"connections":4,"requests":[{"path":"/work?key={{rand 100}}"}]}}`, spec(r))
		h.must(strings.NewReader(plan), "run "+id)
		h.must(nil, "wait "+id)
		res := decodeResult(t, h.must(nil, "result "+id))
		perRequest := map[string][]float64{}
		var diffs []float64
		for _, s := range res.Slices {
			if s.ServiceCPUUsPerRequest == nil || s.ServiceCPUCores == nil || s.ServiceRSSBytes == nil {
				t.Fatalf("%s slice %d lacks its resource fields: %+v", id, s.Index, s)
			}
			t.Logf("%s slice %d %-10s %7.0f µs CPU per request, %.3f cores, RSS %.1f MiB", id, s.Index, s.Arm, *s.ServiceCPUUsPerRequest, *s.ServiceCPUCores, float64(*s.ServiceRSSBytes)/(1<<20))
			perRequest[s.Arm] = append(perRequest[s.Arm], *s.ServiceCPUUsPerRequest)
		}
		for i := range perRequest["champion"] {
			diffs = append(diffs, perRequest["challenger"][i]-perRequest["champion"][i])
		}
		if acc := res.ResourceAccounting["challenger"]; !strings.Contains(acc.CPU, "cpu.stat") {
			t.Errorf("resource accounting: %+v", res.ResourceAccounting)
		}
		return median(perRequest["champion"]), median(perRequest["challenger"]), median(diffs)
	}
	base, single, d1 := extra("cpu-1", rounds)
	_, double, d2 := extra("cpu-2", 2*rounds)
	ratio := d2 / d1
	t.Logf("CPU per request: no hashing %.0f µs; W rounds %.0f µs; 2W rounds %.0f µs", base, single, double)
	fmt.Printf("[e2e] CPU per request beyond the champion's: %.0f µs at %d rounds, %.0f µs at twice that: ratio %.2f (raw %.2f; the rounds alone %v here)\n",
		d1, rounds, d2, ratio, double/single, work.Round(time.Microsecond))
	if ratio < 1.7 || ratio > 2.3 {
		t.Errorf("twice the work per request reads %.2f times the extra CPU per request", ratio)
	}
	if measured := time.Duration(d1 * float64(time.Microsecond)); measured < work*7/10 || measured > work*17/10 {
		t.Errorf("W rounds read %v of CPU per request, far from their %v measured here", measured, work)
	}
}
