package run

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/netguard"
)

// sliceAccounting samples both arms, the host's CPUs and the load generator's own process at
// every slice boundary (a loadgen.SliceObserver) and fills each slice's resource fields from
// the arm it measured. It also guards the slice: one during which the arm not being measured
// was busy (it competes for the same CPUs) is invalid, and one during which anything else on
// the host took CPU (foreign load) is disturbed, so the verdict drops its pair whole. (An arm
// whose service exits ends the run: see measure.)
//
// At every boundary it also reads who holds the arms' connections (a slice where the measured
// arm served anyone but the load generator is disturbed too: foreign_connections), raises the
// OOM preference of processes the arms forked since, and checks each arm's disk and memory: an
// arm that filled its own disk, or lost processes to the OOM killer, ends the run through fail.
type sliceAccounting struct {
	arms       map[string]*arm.Arm
	maxIdle    float64
	maxForeign float64
	disk       uint64         // --arm-disk-bytes, for the words of an arm out of disk
	oom        int64          // the kernel's count of OOM kills, as last read
	oomAt      int            // the boundary that saw it rise (-1: none)
	lostAt     map[string]int // per arm, the last boundary that found processes gone
	fail       func(arm string, failure contract.ArmFailure, message string)
	pids       map[string]map[int]bool // the arms' processes at the last boundary
	oomKills   func() int64            // the kernel's count (isolation.OOMKills)
	// sampler is the CPU the run's profiler has used so far (nil: none); like the load
	// generator's own, it is neither arm's nor foreign load (docs/design/0021-profiles.md).
	sampler func() time.Duration

	mu      sync.Mutex
	samples map[int]boundarySample
}

type boundarySample struct {
	at      time.Time
	usage   map[string]arm.Usage
	host    hostinfo.CPUTime
	self    uint64 // the load generator's process (this one): CPU µs so far
	foreign map[string][]netguard.Conn
	pids    map[string]map[int]bool // the arms' processes
}

func newSliceAccounting(cfg config.Config, iso *isolation.Isolation, fail func(arm string, failure contract.ArmFailure, message string)) *sliceAccounting {
	return &sliceAccounting{arms: map[string]*arm.Arm{contract.Champion: iso.Champion, contract.Challenger: iso.Challenger},
		maxIdle: cfg.MaxIdleArmCores, maxForeign: cfg.MaxForeignCores, disk: cfg.ArmDiskBytes, oom: isolation.OOMKills(), oomAt: -1, lostAt: map[string]int{}, fail: fail, samples: map[int]boundarySample{},
		oomKills: isolation.OOMKills}
}

// Boundary samples both arms.
func (a *sliceAccounting) Boundary(i int) {
	if a.outOfMemory() {
		return
	}
	b := boundarySample{at: time.Now(), usage: map[string]arm.Usage{}, pids: map[string]map[int]bool{}}
	for name, x := range a.arms {
		b.usage[name] = x.Sample()
		b.pids[name] = map[int]bool{}
		for _, p := range x.Procs() {
			b.pids[name][p.Pid] = true
		}
	}
	b.host, b.self = hostinfo.ReadCPUTime(), hostinfo.SelfCPUUs()
	if a.sampler != nil {
		b.self += uint64(a.sampler().Microseconds())
	}
	b.foreign = isolation.ForeignConns(a.arms)
	for name, x := range a.arms {
		x.PreferForOOM()
		if msg, full := isolation.OutOfDisk(x, a.disk); full {
			a.fail(name, contract.ArmOutOfDisk, msg)
		}
	}
	a.checkMemory(i, b.pids)
	a.mu.Lock()
	a.samples[i] = b
	a.mu.Unlock()
}

// outOfMemory fails an arm whose unreclaimable memory reached its limit, before anything reads
// its processes: under such pressure every read of them waits on their memory.
func (a *sliceAccounting) outOfMemory() bool {
	for _, name := range []string{contract.Challenger, contract.Champion} {
		if why, out := isolation.OutOfMemory(a.arms[name]); out {
			a.fail(name, contract.ArmOutOfMemory, why)
			a.arms[name].Clear()
			return true
		}
	}
	return false
}

// checkMemory fails an arm that lost processes to the OOM killer: it fails whole, named,
// rather than limping on. A kill between two reads shows in one check's count and the next
// one's processes (or the other way round), so the two are matched one check apart.
func (a *sliceAccounting) checkMemory(i int, pids map[string]map[int]bool) {
	if oom := a.oomKills(); oom > a.oom {
		a.oom, a.oomAt = oom, i
	}
	defer func() { a.pids = pids }()
	for _, name := range []string{contract.Challenger, contract.Champion} {
		for pid := range a.pids[name] {
			if !pids[name][pid] {
				a.lostAt[name] = i
			}
		}
		lost, seen := a.lostAt[name]
		if why, killed := isolation.KilledForMemory(a.arms[name], seen && a.oomAt >= 0 && abs(lost-a.oomAt) <= 1); killed {
			a.fail(name, contract.ArmOutOfMemory, why)
			// At once: what is left of the arm holds the memory the host needs to stop it
			// (measured: a host held to 476 MiB crawled for minutes while it stayed).
			a.arms[name].Clear()
			return
		}
	}
}

// AfterLoad checks the arms' memory once more when the load is over: the OOM killer may have
// struck while the last requests were answered, after the last boundary.
func (a *sliceAccounting) AfterLoad(slices int) {
	if a.outOfMemory() {
		return
	}
	pids := map[string]map[int]bool{}
	for name, x := range a.arms {
		pids[name] = map[int]bool{}
		for _, p := range x.Procs() {
			pids[name][p.Pid] = true
		}
	}
	a.checkMemory(slices+1, pids)
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
	if cpu, ok := end.usage[s.Arm].CPUUsSince(start.usage[s.Arm]); ok && dt > 0 {
		cores := cpu / float64(dt.Microseconds())
		s.ServiceCPUCores = &cores
		if s.Completed > 0 {
			perRequest := cpu / float64(s.Completed)
			s.ServiceCPUUsPerRequest = &perRequest
		}
	}
	rss := int64(end.usage[s.Arm].RSSBytes)
	s.ServiceRSSBytes = &rss
	if cpu, ok := end.usage[other].CPUUsSince(start.usage[other]); ok && dt > 0 {
		idle := cpu / float64(dt.Microseconds())
		s.IdleArmCPUCores = &idle
		if idle > a.maxIdle {
			invalidate(s, fmt.Sprintf("disturbed: the %s arm, not measured, used %.2f CPU cores during this slice (more than --max-idle-arm-cores %.2f)", other, idle, a.maxIdle))
		}
	}
	a.foreignLoad(s, start, end)
	reached(s, start, end)
}

// reached fills the connections the measured arm served that the load generator did not open,
// and marks the slice disturbed as foreign load does: the verdict drops its pair and names it.
func reached(s *contract.Slice, start, end boundarySample) {
	n, peers := isolation.DescribeForeign(append(start.foreign[s.Arm], end.foreign[s.Arm]...))
	if n == 0 {
		return
	}
	s.ForeignConnections, s.ForeignPeers = n, peers
	why := fmt.Sprintf("reached: the %s served %d connection%s the load generator did not open (%s)", s.Arm, n, plural(n), strings.Join(peers, ", "))
	if s.HostDisturbance != "" {
		why = s.HostDisturbance + "; " + why
	}
	s.HostDisturbance = why
}

// foreignLoad fills the CPU cores the host spent on anything but this run during the slice:
// its busy and stolen CPU time less both arms' and the load generator's, and marks the slice
// disturbed past --max-foreign-cores. Like a stalled generator, that is a measurement the host
// cannot vouch for (docs/design/0004-foreign-load.md), and its pair is dropped and named.
func (a *sliceAccounting) foreignLoad(s *contract.Slice, start, end boundarySample) {
	dt := float64(end.host.At.Sub(start.host.At).Microseconds())
	if !start.host.OK || !end.host.OK || dt <= 0 || end.self < start.self {
		return
	}
	used := end.host.UsedSince(start.host) - float64(end.self-start.self)
	for name := range a.arms {
		cpu, ok := end.usage[name].CPUUsSince(start.usage[name])
		if !ok {
			return // an arm's CPU unread: what is left would count it as foreign
		}
		used -= cpu
	}
	// Steal (and, without a runtime counter, the busy time) is in 10 ms ticks: a quiet host reads
	// a little either side of 0.
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

func invalidate(s *contract.Slice, reason string) {
	s.Valid = false
	if s.InvalidReason != "" {
		s.InvalidReason += "; "
	}
	s.InvalidReason += reason
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
