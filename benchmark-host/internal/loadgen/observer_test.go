package loadgen

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// boundaryRecorder is an observer that records when each boundary came and completes slices
// with a field of its own.
type boundaryRecorder struct {
	mu        sync.Mutex
	at        map[int]time.Time
	completed []int
}

func (b *boundaryRecorder) Boundary(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.at[i] = time.Now()
}

func (b *boundaryRecorder) Complete(s *contract.Slice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.at[s.Index+1]; !ok {
		panic("Complete before the slice's end boundary")
	}
	b.completed = append(b.completed, s.Index)
	cores := float64(s.Index)
	s.ServiceCPUCores = &cores
}

// The observer sees every slice boundary at its time on the schedule, off the event loops, and
// completes each slice after its end.
func TestASliceObserverSeesEveryBoundaryAndCompletesEverySlice(t *testing.T) {
	srv := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(srv.URL, srv.URL, `"rate":200,"slice_seconds":0.3,"pairs":3,"warmup_seconds":0.2,"connections":2,"requests":[{"path":"/"}]`))
	obs := &boundaryRecorder{at: map[int]time.Time{}}
	res, err := Run(context.Background(), p, nil, WithSliceObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.at) != 7 || len(obs.completed) != 6 {
		t.Fatalf("%d boundaries and %d completed slices; want 7 and 6", len(obs.at), len(obs.completed))
	}
	for i, s := range res.Slices {
		if obs.completed[i] != i || s.ServiceCPUCores == nil || *s.ServiceCPUCores != float64(i) {
			t.Errorf("slice %d was not completed in order by the observer", i)
		}
		for _, b := range []struct {
			at   time.Time
			want time.Time
		}{{obs.at[i], s.Start}, {obs.at[i+1], s.End}} {
			if d := b.at.Sub(b.want); d < 0 || d > 50*time.Millisecond {
				t.Errorf("slice %d: a boundary observed %v from its time on the schedule", i, d)
			}
		}
	}
}

// A run stopped early calls the observer at once for the boundary it waited for, so the slice
// cut short is completed too.
func TestAStoppedRunStillCompletesTheSliceItCut(t *testing.T) {
	srv := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(srv.URL, srv.URL, `"rate":200,"slice_seconds":0.5,"pairs":5,"warmup_seconds":0.1,"connections":2,"requests":[{"path":"/"}]`))
	obs := &boundaryRecorder{at: map[int]time.Time{}}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(800*time.Millisecond, func() { cancel(errors.New("test stop")) })
	res, err := Run(ctx, p, nil, WithSliceObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !res.Partial || len(res.Slices) == 0 || len(obs.completed) != len(res.Slices) {
		t.Fatalf("partial %v, %d slices, %d completed by the observer", res.Partial, len(res.Slices), len(obs.completed))
	}
}

// fdWatch records, at the first slice boundary, whether the process holds the PM QoS device.
type fdWatch struct {
	mu   sync.Mutex
	held bool
}

func (w *fdWatch) Boundary(i int) {
	if i == 0 {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.held = holdsDevice(cpuDMALatency)
	}
}

func (w *fdWatch) Complete(*contract.Slice) {}

func holdsDevice(path string) bool {
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && target == path {
			return true
		}
	}
	return false
}

// Asked to, the run holds the CPUs awake while it measures and lets them sleep again after; a
// run that cannot open the device measures anyway and says why; unasked, it leaves them be.
func TestTheRunHoldsTheCPUsAwakeWhenAsked(t *testing.T) {
	if _, err := os.Stat(cpuDMALatency); err != nil {
		t.Skipf("this kernel has no %s: %v", cpuDMALatency, err)
	}
	srv := newServer(t, 0, nil)
	p := mustPlan(t, planJSON(srv.URL, srv.URL, `"rate":200,"slice_seconds":0.5,"pairs":1,"seed":1,"warmup_seconds":0,"requests":[{"path":"/a"}]`))
	w := &fdWatch{}
	res, err := Run(context.Background(), p, nil, WithSliceObserver(w))
	if err != nil {
		t.Fatal(err)
	}
	if res.Host.CPUIdle != CPUIdleNotAsked || w.held {
		t.Errorf("unasked: cpu_idle %q, device held during the run: %v; want neither", res.Host.CPUIdle, w.held)
	}
	w = &fdWatch{}
	res, err = Run(context.Background(), p, nil, WithSliceObserver(w), WithCPUsHeldAwake(OpenForWriting))
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if res.Host.CPUIdle != CPUIdleHeld || !w.held {
			t.Errorf("cpu_idle %q, device held during the run: %v; want held", res.Host.CPUIdle, w.held)
		}
	}
	if holdsDevice(cpuDMALatency) {
		t.Error("the device is still held after the run")
	}

	denied := func(string) (*os.File, error) { return nil, os.ErrPermission }
	res, err = Run(context.Background(), p, nil, WithCPUsHeldAwake(denied))
	if err != nil {
		t.Fatal(err)
	}
	if want := "not held: " + os.ErrPermission.Error(); res.Host.CPUIdle != want || len(res.Slices) != 2 {
		t.Errorf("cpu_idle %q with %d slices; want %q and the run measured", res.Host.CPUIdle, len(res.Slices), want)
	}
}
