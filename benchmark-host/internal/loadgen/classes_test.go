package loadgen

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Each slice tallies every request class (a workload entry) on its own, as it tallies the
// whole slice, and the classes add up to the slice: a request is counted in exactly one class,
// the one its entry is, also when two lanes share the schedule (docs/design/0020-request-classes.md).
func TestEachRequestClassIsTalliedAndTheClassesAddUpToTheSlice(t *testing.T) {
	var mu sync.Mutex
	served := map[string]map[string]int64{} // slice -> path -> requests the server answered
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		class := strings.Split(r.URL.Path, "/")[1]
		mu.Lock()
		if slice := r.Header.Get("X-Slice"); slice != "-1" {
			if served[slice] == nil {
				served[slice] = map[string]int64{}
			}
			served[slice][class]++
		}
		mu.Unlock()
		switch class {
		case "slow":
			time.Sleep(3 * time.Millisecond)
		case "bad":
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	headers := `"headers":{"X-Slice":"{{slice}}"}`
	p := mustPlan(t, planJSON(srv.URL, srv.URL,
		`"rate":400,"slice_seconds":0.5,"pairs":2,"order":"abba","seed":3,"warmup_seconds":0.1,"slice_warmup_ms":0,"connections":4,"generator_cpus":2,
		 "requests":[{"name":"fast","path":"/fast/{{rand 100}}","weight":7,`+headers+`},
		             {"path":"/slow","weight":2,`+headers+`},
		             {"method":"POST","path":"/bad","weight":1,`+headers+`}]`))
	res := run(t, p)
	if len(res.Slices) != 4 {
		t.Fatalf("want 4 slices, got %d", len(res.Slices))
	}
	names := []string{"fast", "slow", "bad"}
	for _, s := range res.Slices {
		if len(s.Classes) != 3 {
			t.Fatalf("slice %d has %d classes, want one per entry (3)", s.Index, len(s.Classes))
		}
		var sum contract.ClassSlice
		for i, c := range s.Classes {
			if want := served[strconv.Itoa(s.Index)][names[i]]; c.Completed != want {
				t.Errorf("slice %d class %s: completed %d, the server answered %d", s.Index, names[i], c.Completed, want)
			}
			h, err := hdrhistogram.Decode([]byte(c.Histogram))
			if err != nil || h.TotalCount() != c.Recorded {
				t.Errorf("slice %d class %s: histogram holds %v (err %v), recorded %d", s.Index, names[i], h, err, c.Recorded)
			}
			sum.Completed += c.Completed
			sum.OK += c.OK
			sum.Recorded += c.Recorded
			sum.Errors.Status5 += c.Errors.Status5
		}
		if sum.Completed != s.Completed || sum.OK != s.OK || sum.Recorded != s.Recorded || sum.Errors.Status5 != s.Errors.Status5 {
			t.Errorf("slice %d: the classes add up to completed %d ok %d recorded %d 5xx %d; the slice has %d, %d, %d, %d",
				s.Index, sum.Completed, sum.OK, sum.Recorded, sum.Errors.Status5, s.Completed, s.OK, s.Recorded, s.Errors.Status5)
		}
		fast, slow, bad := s.Classes[0], s.Classes[1], s.Classes[2]
		if bad.OK != 0 || bad.Errors.Status5 != bad.Completed || fast.Errors.Total()+slow.Errors.Total() != 0 {
			t.Errorf("slice %d: the 500s are not all /bad's: fast %+v slow %+v bad %+v", s.Index, fast.Errors, slow.Errors, bad.Errors)
		}
		// Only the slow class waits 3 ms: its median carries the wait, the fast class's does not.
		if slow.LatencyUs.P50 < 3000 || fast.LatencyUs.P50 >= slow.LatencyUs.P50 {
			t.Errorf("slice %d: p50 fast %d µs, slow %d µs; want slow ≥ 3,000 µs and above fast", s.Index, fast.LatencyUs.P50, slow.LatencyUs.P50)
		}
		if !slices.Contains(slow.ShortOfBudget, "p99") {
			t.Errorf("slice %d: the slow class recorded %d requests, short of budget %v; want p99 (fewer than 300)", s.Index, slow.Recorded, slow.ShortOfBudget)
		}
	}
}

// A workload of one entry has one class: the slice itself, so nothing is tallied twice.
func TestAOneEntryWorkloadRecordsNoClasses(t *testing.T) {
	srv := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(srv.URL, srv.URL, `"rate":200,"slice_seconds":0.5,"pairs":1,"seed":3,"requests":[{"path":"/a"}]`))
	for _, s := range run(t, p).Slices {
		if s.Classes != nil {
			t.Errorf("slice %d carries %d classes for a workload of one entry", s.Index, len(s.Classes))
		}
	}
}
