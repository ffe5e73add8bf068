// Package privilege runs one operation with a few capabilities raised on one OS thread.
//
// install.sh gives perf-host its capabilities as permitted only (setcap …+p): none is in
// effect while perf-host runs, so no file it opens and no signal it sends bypasses the kernel's
// checks, except inside Do, which raises the named capabilities on a locked OS thread for the
// duration of one function and lowers them again (capabilities and CPU affinity are
// per-thread on Linux, and a process started from the thread inherits them; exec then drops
// them, as the services' binaries carry no file capabilities).
package privilege

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
)

// Cap is a Linux capability number.
type Cap uint

// The capabilities perf-host uses.
const (
	DACOverride Cap = 1 // place a process into the host's cgroup subtree from outside it; hold PM QoS
	Kill        Cap = 5 // signal an arm's processes
	SetGID      Cap = 6 // start a service as its arm's group
	SetUID      Cap = 7 // start a service as its arm's user
	// Not raised by Do: handed to the one nft child that rewrites an arm's packet filter, as
	// an ambient capability (internal/netguard).
	NetAdmin Cap = 12
	// Not raised by Do either: handed to the one perf record child that samples the arms'
	// cgroups (internal/profile), as ambient capabilities: perfmon to open system-wide events,
	// sys_ptrace to read the maps of the arms' processes already running.
	SysPtrace Cap = 19
	Perfmon   Cap = 38
)

var capNames = map[Cap]string{DACOverride: "CAP_DAC_OVERRIDE", Kill: "CAP_KILL", SetGID: "CAP_SETGID", SetUID: "CAP_SETUID", NetAdmin: "CAP_NET_ADMIN", SysPtrace: "CAP_SYS_PTRACE", Perfmon: "CAP_PERFMON"}

func (c Cap) String() string { return capNames[c] }

// Thread says how the thread that runs an operation is prepared.
type Thread struct {
	Caps []Cap          // raised in the effective set, when not already in effect
	CPUs placement.CPUs // the thread's CPUs (empty: unchanged)
	// Cgroup v1 groups the thread joins (their tasks files) for the operation, so that a
	// process it starts is born in them (package cgroup); it goes back to its own groups after.
	JoinV1 []string
}

type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

const capVersion3 = 0x20080522

func capget() ([2]capData, error) {
	h := capHeader{version: capVersion3}
	var d [2]capData
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return d, fmt.Errorf("capget: %w", e)
	}
	return d, nil
}

func capset(d [2]capData) error {
	h := capHeader{version: capVersion3}
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

func has(set uint32, hi uint32, c Cap) bool {
	word := set
	if c >= 32 {
		word = hi
	}
	return word&(1<<(uint(c)%32)) != 0
}

// Do runs fn on a locked OS thread prepared as t. A capability that is neither in effect nor
// permitted is an error naming it (install.sh grants them); CPUs the thread cannot take are an
// error too. A thread that cannot be restored afterwards is discarded with its goroutine.
func Do(t Thread, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if len(t.JoinV1) > 0 && syscall.Gettid() == syscall.Getpid() {
			// The main thread: in v1's eyes the process's memory is its group's, even for the
			// moment it is in an arm's. Another thread takes the operation (this one, locked,
			// cannot run it).
			errc <- Do(t, fn)
			runtime.UnlockOSThread()
			return
		}
		restore, err := prepare(t)
		if err == nil {
			err = fn()
		}
		if restore() == nil {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and Go ends its thread with it
		errc <- err
	}()
	return <-errc
}

// prepare raises t's capabilities and pins t's CPUs on the calling thread; restore undoes
// whatever it changed, also after an error.
func prepare(t Thread) (restore func() error, err error) {
	saved, err := capget()
	if err != nil {
		return func() error { return nil }, err
	}
	var savedCPUs placement.CPUs
	back := func() error { return nil }
	restore = func() error {
		// Back to its own v1 groups first, while the capabilities raised for it are in effect.
		if err := back(); err != nil {
			return err
		}
		if err := capset(saved); err != nil {
			return err
		}
		if savedCPUs != nil {
			return placement.PinThread(savedCPUs)
		}
		return nil
	}
	next := saved
	var missing []string
	for _, c := range t.Caps {
		switch {
		case has(saved[0].effective, saved[1].effective, c):
		case has(saved[0].permitted, saved[1].permitted, c):
			next[c/32].effective |= 1 << (uint(c) % 32)
		default:
			missing = append(missing, c.String())
		}
	}
	if len(missing) > 0 {
		return restore, fmt.Errorf("perf-host lacks %s (install.sh grants it with setcap)", strings.Join(missing, ", "))
	}
	if len(t.JoinV1) > 0 && has(saved[0].permitted, saved[1].permitted, DACOverride) {
		// The way back is into the groups perf-host was started in: root's, on a host.
		next[0].effective |= 1 << uint(DACOverride)
	}
	if len(t.CPUs) > 0 {
		cur, err := placement.ThreadAffinity()
		if err != nil {
			return restore, err
		}
		if err := placement.PinThread(t.CPUs); err != nil {
			return restore, err
		}
		savedCPUs = cur
	}
	if next != saved {
		if err := capset(next); err != nil {
			return restore, err
		}
	}
	if len(t.JoinV1) > 0 {
		if back, err = joinV1(t.JoinV1); err != nil {
			return restore, err
		}
	}
	return restore, nil
}

// Effective lists the capabilities of ours in effect on the calling thread, and Permitted
// those perf-host may raise, for `status`.
func Effective() []string {
	return names(func(d [2]capData) (uint32, uint32) { return d[0].effective, d[1].effective })
}

// Permitted lists the capabilities of ours that Do may raise.
func Permitted() []string {
	return names(func(d [2]capData) (uint32, uint32) { return d[0].permitted, d[1].permitted })
}

func names(pick func([2]capData) (uint32, uint32)) []string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := capget()
	if err != nil {
		return nil
	}
	lo, hi := pick(d)
	out := []string{}
	for _, c := range []Cap{DACOverride, Kill, SetGID, SetUID, NetAdmin} {
		if has(lo, hi, c) {
			out = append(out, c.String())
		}
	}
	return out
}
