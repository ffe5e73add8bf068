package arm

import (
	"fmt"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Usage is what an arm's processes have consumed, read at one instant.
type Usage struct {
	At       time.Time
	CPUUs    uint64 // CPU time so far (cumulative)
	RSSBytes uint64 // memory in use now
	OK       bool   // false when the CPU time could not be read
}

// CPUUsSince is the CPU time used between from and u; a counter that went back (the group
// was made anew) gives none.
func (u Usage) CPUUsSince(from Usage) (float64, bool) {
	if !from.OK || !u.OK || u.CPUUs < from.CPUUs {
		return 0, false
	}
	return float64(u.CPUUs - from.CPUUs), true
}

// Accounting describes the sources Sample reads.
func (a *Arm) Accounting() contract.ResourceAccounting {
	var acc contract.ResourceAccounting
	members := "the service's process tree (/proc; a process that leaves the tree is missed)"
	switch {
	case a.Group != nil:
		acc.CPU = fmt.Sprintf("cgroup %s cpu.stat usage_usec", a.Group.Path)
		members = "the processes of cgroup " + a.Group.Path
	case a.Dedicated:
		members = fmt.Sprintf("the processes of user %s (uid %d)", a.User.Name, a.User.UID)
	}
	if acc.CPU == "" {
		acc.CPU = "utime+stime of " + members + " from /proc (10 ms ticks; a process that exits unreaped is missed)"
	}
	if a.Group != nil && a.Group.Has("memory") {
		acc.Memory = fmt.Sprintf("cgroup %s memory.current", a.Group.Path)
	} else {
		acc.Memory = "sum of the RSS of " + members
	}
	return acc
}

// Sample reads the arm's CPU time so far and its memory now.
func (a *Arm) Sample() Usage {
	u := Usage{At: time.Now()}
	var procs []Proc
	memFromGroup := false
	if a.Group != nil {
		cpu, err := a.Group.CPUUsageUs()
		u.CPUUs, u.OK = cpu, err == nil
		u.RSSBytes, memFromGroup = a.Group.MemoryBytes()
	}
	if !u.OK || !memFromGroup {
		procs = a.Procs()
	}
	if !u.OK && a.Group == nil {
		for _, p := range procs {
			u.CPUUs += p.CPUUs
		}
		u.OK = a.Dedicated || a.main != 0
	}
	if !memFromGroup {
		for _, p := range procs {
			u.RSSBytes += p.RSSBytes
		}
	}
	return u
}
