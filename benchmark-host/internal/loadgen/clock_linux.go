package loadgen

import (
	"runtime"
	"syscall"
	"time"
)

// monoClock is the run's time base. Offsets from it are read from Go's monotonic clock (the
// vDSO's CLOCK_MONOTONIC, no syscall), and every wait is a relative epoll_pwait2 timeout
// computed from such a reading, so the schedule and the timestamps share one clock and a
// request cannot leave before its intended time.
type monoClock struct {
	base time.Time
}

func newMonoClock() monoClock { return monoClock{base: time.Now()} }

// since returns the offset of t from the clock's base.
func (c monoClock) since(t time.Time) time.Duration { return t.Sub(c.base) }

// at returns the Go time of an offset from the clock's base.
func (c monoClock) at(offset time.Duration) time.Time { return c.base.Add(offset) }

const prSetTimerslack = 29

// Package init runs on the main thread, and Linux threads inherit timer slack from the thread
// that clones them, so every runtime thread started later gets 1 ns slack too: a wait's
// timeout then fires when asked, not up to the default 50 µs later.
func init() { setTimerSlack() }

// yieldEvery is how often a lane passes through the Go scheduler. A goroutine that runs (or
// sits in raw syscalls) on one scheduling tick for 10 ms is preempted by sysmon with a signal
// every 20 µs tick, and sysmon stops backing off: that cost a third of the context switches
// per request. A yield every millisecond keeps the tick moving for a few hundred ns each.
const yieldEvery = 5 * time.Millisecond

// yieldToScheduler lets other goroutines run. The lane is not locked to its thread (a locked
// goroutine's yield costs two thread hand-offs), so it may come back on another thread: the
// timer slack is set again, cheaply, for that thread.
func yieldToScheduler() {
	runtime.Gosched()
	setTimerSlack()
}

func setTimerSlack() {
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
}
