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
// the disturbance limit, in 102 of 120 pairs (docs/design/0012-slice-design.md). It asks for no
// privilege and takes no more CPU: the generator's share stays its weight's, only its waits get
// shorter.
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

// shortenGeneratorSlice asks for the short slice on every normal thread of the process
// (threads cloned later inherit it) and says what the kernel granted, for
// HostInfo.GeneratorSlice: "0.1 ms", or "default: " and why. restore gives every thread with
// the short slice (those cloned since inherited it) the kernel's slice back: perf-host runs the
// generator in its own process, and a service it starts later (the champion again) must not
// inherit it. A thread's policy and nice value are kept (sched_setattr sets both), and a thread
// with another policy (real-time, batch, idle), set by the host's owner, is left alone.
func shortenGeneratorSlice() (state string, restore func()) {
	restore = func() {
		forEveryThread(func(tid int) error {
			return setSlice(tid, 0, generatorSliceNs)
		})
	}
	err := forEveryThread(func(tid int) error {
		return setSlice(tid, generatorSliceNs, 0)
	})
	if err != nil {
		return "default: " + err.Error(), restore
	}
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

// forEveryThread calls fn for each thread of the process, again until a pass finds none it has
// not seen: the Go runtime may clone one meanwhile, from a thread not yet seen. The first error
// is returned after every thread had its call.
func forEveryThread(fn func(tid int) error) error {
	seen := map[int]bool{}
	var first error
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || seen[tid] {
				continue
			}
			seen[tid], fresh = true, true
			if err := fn(tid); err != nil && first == nil {
				first = err
			}
		}
		if !fresh {
			break
		}
	}
	return first
}

// setSlice sets a normal thread's slice to ns (0: the kernel's), keeping its nice value; only
// from the slice from, when from is not 0. A thread of another policy or slice, or one that
// exited, is left as it is.
func setSlice(tid int, ns, from uint64) error {
	var attr schedAttr
	if _, _, e := unix.Syscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0, 0, 0); e != 0 {
		if e == unix.ESRCH {
			return nil
		}
		return fmt.Errorf("sched_getattr: %w", e)
	}
	if attr.policy != unix.SCHED_NORMAL || from != 0 && attr.runtime != from {
		return nil
	}
	attr = schedAttr{size: uint32(unsafe.Sizeof(schedAttr{})), policy: unix.SCHED_NORMAL, nice: attr.nice, runtime: ns}
	if _, _, e := unix.Syscall(unix.SYS_SCHED_SETATTR, uintptr(tid), uintptr(unsafe.Pointer(&attr)), 0); e != 0 {
		if e == unix.ESRCH {
			return nil
		}
		return fmt.Errorf("sched_setattr: %w", e)
	}
	return nil
}
