package hostinfo

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
)

// userHz is the unit of /proc/stat's CPU times: USER_HZ, 100 on every Linux architecture
// perf-host is built for.
const userHz = 100

// CPUTime is the whole machine's CPU time so far, in µs: the time every CPU spent on any
// task, and the time the hypervisor gave to others while a CPU wanted to run (steal), which a
// busy neighbour on a shared machine shows as.
//
// The busy time is the scheduler's own clock where a cgroup hierarchy sums it for the whole
// machine (Runtime), and /proc/stat's ticks only where none does. /proc/stat samples each CPU
// at the timer tick, and on a kernel that accounts CPU time by tick (most do) a load paced by
// timers, as the load generator's is, wakes in step with the tick: a run of 1,000 requests a
// second read 1.2 cores busy there while its tasks ran for 0.6, and the other 0.6 looked like
// another job's (docs/design/0004-foreign-load.md). Without irq time accounting (most kernels)
// a task's runtime includes the softirqs it ran, so the busy time counts them too.
type CPUTime struct {
	At      time.Time
	BusyUs  uint64 // /proc/stat's busy ticks, in µs
	StealUs uint64
	// Runtime is the tasks' runtime so far, in µs, per counter that sums it (the v1 cpuacct
	// root's, or each top-level v2 cgroup's); nil where none could be read.
	Runtime map[string]uint64
	OK      bool
}

// UsedSince is the CPU time, in µs, the machine spent busy or stolen since from.
func (t CPUTime) UsedSince(from CPUTime) float64 {
	steal := float64(t.StealUs) - float64(from.StealUs)
	if t.Runtime == nil || from.Runtime == nil {
		return float64(t.BusyUs) - float64(from.BusyUs) + steal
	}
	var busy float64
	for name, now := range t.Runtime {
		// A cgroup made since from ran all of its time since (its earlier reading is 0); one
		// made again under the same name counts from its new start.
		if before := from.Runtime[name]; now >= before {
			busy += float64(now - before)
		} else {
			busy += float64(now)
		}
	}
	return busy + steal
}

// ReadCPUTime reads the "cpu" line of /proc/stat and the tasks' runtime.
func ReadCPUTime() CPUTime {
	t := CPUTime{At: time.Now(), Runtime: readRuntime()}
	f, err := os.Open("/proc/stat")
	if err != nil {
		return t
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return t
	}
	fields := strings.Fields(s.Text())
	// cpu user nice system idle iowait irq softirq steal …
	if len(fields) < 9 || fields[0] != "cpu" {
		return t
	}
	tick := func(i int) uint64 {
		v, err := strconv.ParseUint(fields[i], 10, 64)
		if err != nil {
			t.OK = false
		}
		return v * (1_000_000 / userHz)
	}
	t.OK = true
	t.BusyUs = tick(1) + tick(2) + tick(3) + tick(6) + tick(7)
	t.StealUs = tick(8)
	return t
}

// runtimeSource is where the whole machine's task runtime is summed: the v1 cpuacct
// hierarchy's root (every task, in ns), else the v2 hierarchy's top-level groups, where the
// root itself holds kernel threads alone, as on a systemd host (the v2 root's own cpu.stat is
// /proc/stat's ticks again, and a program in the root would be missed). Found once: mounts do
// not move under a run, and a systemd host starts nothing in the root.
var runtimeSource = sync.OnceValues(func() (cpuacct, v2 string) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		m := strings.Fields(s.Text())
		if len(m) < 4 {
			continue
		}
		switch {
		case m[2] == "cgroup" && slices.Contains(strings.Split(m[3], ","), "cpuacct"):
			cpuacct = m[1]
		case m[2] == "cgroup2" && v2 == "" && onlyKernelThreads(filepath.Join(m[1], "cgroup.procs")):
			v2 = m[1]
		}
	}
	return cpuacct, v2
})

// onlyKernelThreads says whether a cgroup.procs lists kernel threads alone (no command line).
func onlyKernelThreads(procs string) bool {
	b, err := os.ReadFile(procs)
	if err != nil {
		return false
	}
	for _, pid := range strings.Fields(string(b)) {
		if cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && len(cmdline) > 0 {
			return false
		}
	}
	return true
}

func readRuntime() map[string]uint64 {
	cpuacct, v2 := runtimeSource()
	if cpuacct != "" {
		if b, err := os.ReadFile(filepath.Join(cpuacct, "cpuacct.usage")); err == nil {
			if ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return map[string]uint64{"cpuacct": ns / 1000}
			}
		}
	}
	if v2 == "" {
		return nil
	}
	entries, err := os.ReadDir(v2)
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if us, err := cgroup.CPUUsageUs(filepath.Join(v2, e.Name())); err == nil {
			out[e.Name()] = us
		}
	}
	if len(out) == 0 {
		return nil // no group holds the machine's tasks: /proc/stat's ticks are all there is
	}
	return out
}

// SelfCPUUs is the CPU time this process has used so far, all its threads, in µs.
func SelfCPUUs() uint64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return uint64(ru.Utime.Nano()/1000) + uint64(ru.Stime.Nano()/1000)
}
