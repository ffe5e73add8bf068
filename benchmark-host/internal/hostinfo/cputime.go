package hostinfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHz is the unit of /proc/stat's CPU times: USER_HZ, 100 on every Linux architecture
// perf-host is built for.
const userHz = 100

// CPUTime is the whole machine's CPU time so far, in µs: the time every CPU spent on any
// work (user, nice, system, irq, softirq), and the time the hypervisor gave to other guests
// (steal), which a busy neighbour on a shared machine shows as. Without irq time accounting
// (most kernels) a task's own runtime includes the softirqs it ran, so the busy time counts
// them as well: subtracting the run's cgroups then leaves only what others did.
type CPUTime struct {
	At      time.Time
	BusyUs  uint64
	StealUs uint64
	OK      bool
}

// UsedSince is the CPU time, in µs, the machine spent busy or stolen since from.
func (t CPUTime) UsedSince(from CPUTime) float64 {
	return float64(t.BusyUs+t.StealUs) - float64(from.BusyUs+from.StealUs)
}

// ReadCPUTime reads the "cpu" line of /proc/stat.
func ReadCPUTime() CPUTime {
	t := CPUTime{At: time.Now()}
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

// SelfCPUUs is the CPU time this process has used so far, all its threads, in µs.
func SelfCPUUs() uint64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return uint64(ru.Utime.Nano()/1000) + uint64(ru.Stime.Nano()/1000)
}
