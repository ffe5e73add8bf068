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

func newMonoClock() monoClock { return calibrateMonoClock(time.Now, clockGettime) }

// A bracket this tight puts the mapping within a microsecond; looser ones are retried.
const (
	goodBracket     = 5 * time.Microsecond
	bracketAttempts = 1000
)

// calibrateMonoClock brackets a raw CLOCK_MONOTONIC reading between two Go readings and maps
// it to their midpoint. A thread stalled inside the bracket (preempted, a busy or stolen CPU)
// would shift the whole schedule by half the stall, sending every request early or late, so
// it keeps the tightest of many brackets.
func calibrateMonoClock(now func() time.Time, mono func() int64) monoClock {
	var best monoClock
	width := time.Duration(1<<63 - 1)
	for i := 0; i < bracketAttempts && width > goodBracket; i++ {
		before := now()
		m := mono()
		after := now()
		if w := after.Sub(before); w < width {
			width, best = w, monoClock{base: before.Add(w / 2), baseMono: m}
		}
	}
	return best
}

func clockGettime() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// since returns the offset of t from the clock's base.
func (c monoClock) since(t time.Time) time.Duration { return t.Sub(c.base) }

// at returns the Go time of an offset from the clock's base.
func (c monoClock) at(offset time.Duration) time.Time { return c.base.Add(offset) }

// rawSleepMax is the longest wait done as a raw syscall. A raw syscall leaves the thread's P
// "running", so the scheduler does not retake it and hand it back around every request
// (that churn cost ~30% more CPU per request); but a P that sleeps holds up a GC
// stop-the-world, so longer waits (low rates) take the ordinary syscall path.
const rawSleepMax = 2 * time.Millisecond

// sleepUntil blocks until the offset is reached. Absolute-time sleeps do not accumulate
// error, and retrying on EINTR is exact because the deadline does not move (the Go runtime
// interrupts threads with SIGURG for preemption).
func (c monoClock) sleepUntil(offset time.Duration) {
	ts := syscall.NsecToTimespec(c.baseMono + int64(offset))
	sleep := syscall.Syscall6
	// Go's clock reads through the vDSO; asking the kernel here would cost a syscall per request.
	if offset-c.since(time.Now()) <= rawSleepMax {
		sleep = syscall.RawSyscall6
	}
	for {
		_, _, errno := sleep(syscall.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// Package init runs on the main thread, and Linux threads inherit timer slack from the thread
// that clones them, so the runtime threads started later get 1 ns slack too. That matters for
// the hand-off: a thread stealing a just-readied worker from the dispatcher's P does a 3 µs
// usleep first, which the default 50 µs slack stretches into ~55 µs of dispatch lag.
func init() { setTimerSlack() }

// pinDispatcherThread locks the calling goroutine to its OS thread, with 1 ns timer slack.
func pinDispatcherThread() {
	runtime.LockOSThread()
	setTimerSlack()
}

func setTimerSlack() {
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
}
