package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// generatorSliceNs is the CPU slice the generator's threads ask the scheduler for: the
// shortest Linux takes. Under EEVDF (Linux 6.6+) a woken task waits for the running one to use
// up its slice, 0.7 ms x (1 + log2 CPUs) by default (1.4 ms on 2 CPUs); since Linux 6.12 a task
// that asks for a shorter slice (sched_setattr's sched_runtime) preempts at once. Without it a
// service's 5 ms requests on the generator's CPU held its sends back by 1-1.5 ms at p99, past
// the disturbance limit, in 102 of 120 pairs (issue 13). It asks for no privilege and takes no
// more CPU: the generator's share stays its weight's, only its waits get shorter.
const generatorSliceNs = 100_000

// schedAttr is the kernel's struct sched_attr (include/uapi/linux/sched/types.h).
type schedAttr struct {
	size                      uint32
	policy                    uint32
	flags                     uint64
	nice                      int32
	priority                  uint32
	runtime, deadline, period uint64
	utilMin, utilMax          uint32
}

// shortenGeneratorSlice asks for the short slice on every thread of the process (threads
// cloned later inherit it) and says what the kernel granted, for HostInfo.GeneratorSlice:
// "0.1 ms", or "default: " and why. restore gives every thread the kernel's slice back: perf-host
// runs the generator in its own process, and a service it starts later (the champion again)
// must not inherit the short slice.
func shortenGeneratorSlice() (state string, restore func()) {
	if err := setSliceOfEveryThread(generatorSliceNs); err != nil {
		return "default: " + err.Error(), func() {}
	}
	restore = func() { setSliceOfEveryThread(0) }
	// Kernels before 6.12 accept sched_runtime for a normal task and ignore it: ask which.
	var got schedAttr
	if _, _, e := unix.Syscall6(unix.SYS_SCHED_GETATTR, 0, uintptr(unsafe.Pointer(&got)), unsafe.Sizeof(got), 0, 0, 0); e != 0 {
		return "default: sched_getattr: " + e.Error(), restore
	}
	if got.runtime != generatorSliceNs {
		return "default: the kernel keeps its own slice for normal tasks (custom slices need Linux 6.12)", restore
	}
	return fmt.Sprintf("%.1f ms", float64(generatorSliceNs)/1e6), restore
}

// setSliceOfEveryThread sets the slice of the process's normal threads (0: the kernel's).
func setSliceOfEveryThread(ns uint64) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		attr := schedAttr{size: uint32(unsafe.Sizeof(schedAttr{})), policy: unix.SCHED_NORMAL, runtime: ns}
		if _, _, e := unix.Syscall(unix.SYS_SCHED_SETATTR, uintptr(tid), uintptr(unsafe.Pointer(&attr)), 0); e != 0 && e != unix.ESRCH {
			return fmt.Errorf("sched_setattr: %w", e)
		}
	}
	return nil
}
