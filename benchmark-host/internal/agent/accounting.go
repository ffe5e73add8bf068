package agent

import (
	"fmt"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
)

// sliceAccounting samples both arms, the host's CPUs and the load generator's own process at
// every slice boundary (a loadgen.SliceObserver) and fills each slice's resource fields from
// the arm it measured. It also guards the slice: one during which the arm not being measured
// was busy (it competes for the same CPUs) is invalid, and one during which anything else on
// the host took CPU (foreign load) is disturbed, so the verdict drops its pair whole. (An arm
// whose service exits ends the run: see measure.)
type sliceAccounting struct {
	arms       map[string]*arm.Arm
	maxIdle    float64
	maxForeign float64

	mu      sync.Mutex
	samples map[int]boundarySample
}

type boundarySample struct {
	at    time.Time
	usage map[string]arm.Usage
	host  hostinfo.CPUTime
	self  uint64 // the load generator's process (this one): CPU µs so far
}

func (h *Host) newSliceAccounting(iso *isolation) *sliceAccounting {
	return &sliceAccounting{arms: map[string]*arm.Arm{contract.Champion: iso.champion, contract.Challenger: iso.challenger},
		maxIdle: h.MaxIdleArmCores, maxForeign: h.MaxForeignCores, samples: map[int]boundarySample{}}
}

// Boundary samples both arms.
func (a *sliceAccounting) Boundary(i int) {
	b := boundarySample{at: time.Now(), usage: map[string]arm.Usage{}}
	for name, x := range a.arms {
		b.usage[name] = x.Sample()
	}
	b.host, b.self = hostinfo.ReadCPUTime(), hostinfo.SelfCPUUs()
	a.mu.Lock()
	a.samples[i] = b
	a.mu.Unlock()
}

// Complete fills the slice's resource fields and invalidates a disturbed slice.
func (a *sliceAccounting) Complete(s *contract.Slice) {
	a.mu.Lock()
	start, ok1 := a.samples[s.Index]
	end, ok2 := a.samples[s.Index+1]
	a.mu.Unlock()
	if !ok1 || !ok2 {
		return
	}
	dt := end.at.Sub(start.at)
	other := contract.Champion
	if s.Arm == contract.Champion {
		other = contract.Challenger
	}
	if cpu, ok := cpuUs(start.usage[s.Arm], end.usage[s.Arm]); ok && dt > 0 {
		cores := cpu / float64(dt.Microseconds())
		s.ServiceCPUCores = &cores
		if s.Completed > 0 {
			perRequest := cpu / float64(s.Completed)
			s.ServiceCPUUsPerRequest = &perRequest
		}
	}
	rss := int64(end.usage[s.Arm].RSSBytes)
	s.ServiceRSSBytes = &rss
	if cpu, ok := cpuUs(start.usage[other], end.usage[other]); ok && dt > 0 {
		idle := cpu / float64(dt.Microseconds())
		s.IdleArmCPUCores = &idle
		if idle > a.maxIdle {
			invalidate(s, fmt.Sprintf("disturbed: the %s arm, not measured, used %.2f CPU cores during this slice (more than --max-idle-arm-cores %.2f)", other, idle, a.maxIdle))
		}
	}
	a.foreignLoad(s, start, end)
}

// foreignLoad fills the CPU cores the host spent on anything but this run during the slice:
// its busy and stolen CPU time less both arms' and the load generator's, and marks the slice
// disturbed past --max-foreign-cores. Like a stalled generator, that is a measurement the host
// cannot vouch for (docs/design/0005-foreign-load.md), and its pair is dropped and named.
func (a *sliceAccounting) foreignLoad(s *contract.Slice, start, end boundarySample) {
	dt := float64(end.host.At.Sub(start.host.At).Microseconds())
	if !start.host.OK || !end.host.OK || dt <= 0 || end.self < start.self {
		return
	}
	used := float64(end.host.BusyUs+end.host.StealUs) - float64(start.host.BusyUs+start.host.StealUs) - float64(end.self-start.self)
	for name := range a.arms {
		cpu, ok := cpuUs(start.usage[name], end.usage[name])
		if !ok {
			return // an arm's CPU unread: what is left would count it as foreign
		}
		used -= cpu
	}
	// /proc/stat counts in 10 ms ticks: a quiet host reads a few ticks either side of 0.
	cores := max(0, used/dt)
	s.ForeignCPUCores = &cores
	if cores > a.maxForeign {
		stolen := ""
		if steal := float64(end.host.StealUs-start.host.StealUs) / dt; steal >= 0.05 {
			stolen = fmt.Sprintf(", %.2f of them stolen by the hypervisor", steal)
		}
		s.HostDisturbance = fmt.Sprintf("foreign load: %.2f CPU cores busy with work other than this run's arms and load generator%s, over --max-foreign-cores %.2f", cores, stolen, a.maxForeign)
	}
}

// cpuUs is the CPU time used between two samples; a counter that went back (the group was
// made anew) gives none.
func cpuUs(from, to arm.Usage) (float64, bool) {
	if !from.OK || !to.OK || to.CPUUs < from.CPUUs {
		return 0, false
	}
	return float64(to.CPUUs - from.CPUUs), true
}

func invalidate(s *contract.Slice, reason string) {
	s.Valid = false
	if s.InvalidReason != "" {
		s.InvalidReason += "; "
	}
	s.InvalidReason += reason
}
