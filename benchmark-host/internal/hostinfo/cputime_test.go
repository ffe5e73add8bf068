package hostinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestUsedSinceCountsEachRuntimeCounterFromWhereItWas(t *testing.T) {
	from := CPUTime{BusyUs: 1_000_000, StealUs: 10, Runtime: map[string]uint64{"system.slice": 500, "user.slice": 900, "gone.slice": 70}}
	to := CPUTime{BusyUs: 9_000_000, StealUs: 30, Runtime: map[string]uint64{
		"system.slice": 800, // +300
		"user.slice":   100, // made again under the same name: all 100 since
		"new.slice":    40,  // made since: all 40
	}}
	if got, want := to.UsedSince(from), 300.0+100+40+20; got != want {
		t.Errorf("UsedSince = %v, want %v (the runtime counters and the steal, not /proc/stat's ticks)", got, want)
	}
	to.Runtime = nil
	if got, want := to.UsedSince(from), 8_000_000.0+20; got != want {
		t.Errorf("without runtime counters UsedSince = %v, want /proc/stat's %v", got, want)
	}
}

func TestOnlyKernelThreads(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cgroup.procs")
	// A kernel thread of this machine (no command line), or, in a PID namespace that shows
	// none, a process that has gone: neither is a program in the root.
	kernel := "999999999"
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && len(b) == 0 {
				kernel = e.Name()
				break
			}
		}
	}
	os.WriteFile(p, []byte(kernel+"\n"), 0o600)
	if !onlyKernelThreads(p) {
		t.Errorf("pid %s (no command line) read as a program in the root", kernel)
	}
	os.WriteFile(p, []byte(kernel+"\n"+strconv.Itoa(os.Getpid())+"\n"), 0o600)
	if onlyKernelThreads(p) {
		t.Error("this test's own process read as a kernel thread")
	}
}

// What this process burns shows in the machine's busy time, by whichever source this machine has.
func TestReadCPUTimeSeesThisProcessWork(t *testing.T) {
	a, aSelf := ReadCPUTime(), SelfCPUUs()
	if !a.OK {
		t.Skip("/proc/stat unreadable")
	}
	t.Logf("runtime counters: %d (nil: /proc/stat's ticks)", len(a.Runtime))
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	b, bSelf := ReadCPUTime(), SelfCPUUs()
	burned := float64(bSelf - aSelf)
	// Other work only adds; the ticks' granularity (10 ms) is the slack.
	if used := b.UsedSince(a); used < burned-20_000 {
		t.Errorf("the machine's busy time grew %.0f µs while this process alone burned %.0f µs", used, burned)
	}
}
