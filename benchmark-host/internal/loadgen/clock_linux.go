package loadgen

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// monoClock maps offsets on the run's schedule to both Go time (for latency arithmetic) and
// absolute CLOCK_MONOTONIC nanoseconds (for clock_nanosleep). Go's own monotonic clock is
// CLOCK_MONOTONIC on Linux, so the two never drift apart.
type monoClock struct {
	base     time.Time // carries Go's monotonic reading
	baseMono int64     // CLOCK_MONOTONIC at base, in ns
}

const (
	clockMonotonic  = 1
	timerAbstime    = 1
	prSetTimerslack = 29
)

func newMonoClock() monoClock {
	// Bracket the raw reading between two Go readings and take the midpoint: error < 1 µs.
	before := time.Now()
	mono := clockGettime()
	after := time.Now()
	return monoClock{base: before.Add(after.Sub(before) / 2), baseMono: mono}
}

func clockGettime() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// at returns the Go time of an offset from the clock's base.
func (c monoClock) at(offset time.Duration) time.Time { return c.base.Add(offset) }

// sleepUntil blocks until the offset is reached. Absolute-time sleeps do not accumulate
// error, and retrying on EINTR is exact because the deadline does not move (the Go runtime
// interrupts threads with SIGURG for preemption).
func (c monoClock) sleepUntil(offset time.Duration) {
	ts := syscall.NsecToTimespec(c.baseMono + int64(offset))
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// pinDispatcherThread locks the calling goroutine to its OS thread and sets that thread's
// timer slack to 1 ns; the default 50 µs slack would otherwise be added to every wake-up.
func pinDispatcherThread() {
	runtime.LockOSThread()
	syscall.Syscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
}
