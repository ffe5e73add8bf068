package loadgen

import (
	"fmt"
	"testing"
	"time"
)

// The send window decides which due requests share a wake-up: at 2,000 req/s (500 µs apart)
// a window below the gap wakes for every request, 500 µs takes two per wake-up, 1,000 µs three.
func TestWakeAtTakesTheRequestsDueWithinTheWindow(t *testing.T) {
	for _, tc := range []struct {
		lanes  int
		window time.Duration
		want   uint64 // the request whose due time is the wake-up, from request 0
	}{
		{1, 0, 0},
		{1, 250 * time.Microsecond, 0},
		{1, 500 * time.Microsecond, 1},
		{1, 1000 * time.Microsecond, 2},
		// Two lanes take every other request: each lane's requests are 1 ms apart.
		{2, 500 * time.Microsecond, 0},
		{2, 1000 * time.Microsecond, 2},
		{2, 999 * time.Microsecond, 0},
		{1, 1001 * time.Microsecond, 2},
	} {
		s := &schedule{t0: 7 * time.Millisecond, period: float64(500 * time.Microsecond), window: tc.window}
		w := walk{index: 0, count: tc.lanes, sched: s}
		if got, want := w.wakeAt(), s.at(tc.want); got != want {
			t.Errorf("%d lane(s), window %v: wakes at %v, want %v (request %d's due time)", tc.lanes, tc.window, got, want, tc.want)
		}
	}
}

// send_window_us reaches the lanes: with a 1 ms window at 2,000 req/s requests leave in threes,
// 1,000, 500 and 0 µs late, so every slice's dispatch lag p50 is at least ~500 µs (a stalled
// machine only adds to it), and still every request is sent in its slice.
func TestTheSendWindowIsTheGeneratorsTimingResolution(t *testing.T) {
	srv := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(srv.URL, srv.URL,
		`"rate":2000,"slice_seconds":0.5,"pairs":1,"seed":1,"slice_warmup_ms":0,"connections":4,"generator_cpus":1,
		 "send_window_us":1000,"requests":[{"path":"/"}]`))
	for _, s := range run(t, p).Slices {
		if s.Sent != 1000 || s.DispatchLagUs.P50 < 400 {
			t.Errorf("slice %d: sent %d of 1000, dispatch lag p50 %d µs (want ≥ 400 with a 1 ms window)", s.Index, s.Sent, s.DispatchLagUs.P50)
		}
	}
}

// wakeAt computes the last request within the window; walking to it request by request is
// the definition, checked here over rates whose period is not a whole number of nanoseconds.
func TestWakeAtAgreesWithWalkingTheSchedule(t *testing.T) {
	for _, rate := range []float64{1, 300, 3000, 7001, 33333, 1e6} {
		for _, lanes := range []int{1, 3} {
			for _, window := range []time.Duration{0, 1, 250 * time.Microsecond, 999 * time.Microsecond, time.Millisecond} {
				s := &schedule{t0: 13 * time.Millisecond, period: float64(time.Second) / rate, window: window}
				for _, k := range []uint64{0, 1, 12345} {
					w := walk{index: int(k % uint64(lanes)), count: lanes, sched: s, nextK: k}
					want := s.at(k)
					for j := k + uint64(lanes); s.at(j) <= s.at(k)+window; j += uint64(lanes) {
						want = s.at(j)
					}
					if got := w.wakeAt(); got != want {
						t.Fatalf("rate %v, %d lanes, window %v, from request %d: wakes at %v, walking says %v", rate, lanes, window, k, got, want)
					}
				}
			}
		}
	}
}

// A request's draw is its position in its slice: both slices of a pair draw 0, 1, 2, … from
// their first request, under the pair's own prefix, whatever the rate's period in nanoseconds.
func TestBothSlicesOfAPairDrawTheSamePositions(t *testing.T) {
	for _, rate := range []float64{300, 333, 1000, 7001} {
		for _, slice := range []float64{0.25, 0.7, 1.5} {
			p := mustPlan(t, planJSON("http://127.0.0.1:1", "http://127.0.0.1:2",
				fmt.Sprintf(`"rate":%v,"slice_seconds":%v,"pairs":3,"seed":1,"warmup_seconds":0.33,"requests":[{"path":"/"}]`, rate, slice)))
			s := newSchedule(p, newMonoClock(), p.SliceOrder(), 5*time.Millisecond)
			draws := map[int][]uint64{}
			for k := uint64(0); s.at(k) < s.end; k++ {
				i := s.sliceOf(s.at(k))
				if i >= 0 {
					draws[i] = append(draws[i], s.draw(k, i))
				} else if s.draw(k, i) != k {
					t.Fatalf("warmup request %d draws %d, want its seq", k, s.draw(k, i))
				}
			}
			for i := range 6 {
				d := draws[i]
				if d[0] != uint64(i/2+1)<<32 || d[len(d)-1] != d[0]+uint64(len(d)-1) {
					t.Fatalf("rate %v, slice %v s: slice %d draws %#x … %#x over %d requests, want pair %d's 0 … %d", rate, slice, i, d[0], d[len(d)-1], len(d), i/2, len(d)-1)
				}
			}
			for pair := range 3 {
				if a, b := len(draws[2*pair]), len(draws[2*pair+1]); a-b > 1 || b-a > 1 {
					t.Errorf("rate %v, slice %v s: pair %d's slices have %d and %d requests", rate, slice, pair, a, b)
				}
			}
		}
	}
}
