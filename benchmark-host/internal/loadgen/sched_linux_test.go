package loadgen

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sliceOf reads a thread's CPU slice as the kernel reports it (0 before Linux 6.12); exited is
// true when the thread is gone.
func sliceOf(t *testing.T, tid int) (ns uint64, exited bool) {
	t.Helper()
	var a schedAttr
	if _, _, e := unix.Syscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e != 0 {
		if e == unix.ESRCH {
			return 0, true
		}
		t.Fatalf("sched_getattr %d: %v", tid, e)
	}
	return a.runtime, false
}

func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}

// Every thread of the generator runs with the short slice, those the Go runtime starts later
// too; on a kernel without custom slices the result says so instead of claiming it.
func TestTheGeneratorsThreadsAskForTheShortSlice(t *testing.T) {
	before, _ := sliceOf(t, unix.Gettid())
	if before == generatorSliceNs {
		t.Fatalf("a run before this test left its thread the short slice")
	}
	got, restore := shortenGeneratorSlice()
	if !kernelAtLeast(t, 6, 12) {
		if !strings.HasPrefix(got, "default: ") {
			t.Fatalf("on a kernel before 6.12 the slice is the default, got %q", got)
		}
		t.Skipf("kernel without custom slices: %s", got)
	}
	if got != "0.1 ms" {
		t.Fatalf("generator slice %q, want 0.1 ms", got)
	}
	// Locked goroutines each need a thread of their own: the runtime starts new ones.
	var started, done sync.WaitGroup
	release := make(chan struct{})
	for range 6 {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if s, exited := sliceOf(t, tid); !exited && s != generatorSliceNs {
			t.Errorf("thread %d runs with a %d ns slice, want %d", tid, s, generatorSliceNs)
		}
	}
	if len(tasks) < 7 {
		t.Errorf("only %d threads seen: the test did not start new ones", len(tasks))
	}
	// Afterwards every thread has the kernel's slice again, so nothing started later inherits it.
	restore()
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if s, exited := sliceOf(t, tid); !exited && s != before {
			t.Errorf("thread %d has a %d ns slice after the run, want the default %d ns", tid, s, before)
		}
	}
	close(release)
	done.Wait()
}
