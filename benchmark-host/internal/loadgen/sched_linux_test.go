package loadgen

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attrOf reads a thread's scheduling attributes; exited is true when the thread is gone.
func attrOf(t *testing.T, tid int) (a schedAttr, exited bool) {
	t.Helper()
	if _, _, e := unix.Syscall6(unix.SYS_SCHED_GETATTR, uintptr(tid), uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e != 0 {
		if e == unix.ESRCH {
			return a, true
		}
		t.Fatalf("sched_getattr %d: %v", tid, e)
	}
	return a, false
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

func threadIDs(t *testing.T) map[int]bool {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		ids[tid] = true
	}
	return ids
}

// onOwnThread runs fn on a thread of its own until release is closed; the thread is then
// discarded (the goroutine exits locked), so whatever fn changed on it goes with it.
func onOwnThread(t *testing.T, fn func(tid int), release chan struct{}) int {
	t.Helper()
	tidc := make(chan int)
	go func() {
		runtime.LockOSThread()
		tid := unix.Gettid()
		fn(tid)
		tidc <- tid
		<-release
	}()
	return <-tidc
}

// Every normal thread of the generator runs with the short slice, those the Go runtime starts
// later too, with its nice value kept; afterwards every thread has the kernel's slice again. On
// a kernel without custom slices the result says so instead of claiming it.
func TestTheGeneratorsThreadsAskForTheShortSlice(t *testing.T) {
	before, _ := attrOf(t, unix.Gettid())
	if before.runtime == generatorSliceNs {
		t.Fatalf("a run before this test left its thread the short slice")
	}
	release := make(chan struct{})
	defer close(release)
	// A thread the host's owner niced: sched_setattr sets the nice value too, so it must be kept.
	niced := onOwnThread(t, func(tid int) {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 3); err != nil {
			t.Errorf("setpriority: %v", err)
		}
	}, release)
	existing := threadIDs(t)

	got, restore := shortenGeneratorSlice()
	t.Cleanup(restore)
	if !kernelAtLeast(t, 6, 12) {
		if !strings.HasPrefix(got, "default: ") {
			t.Fatalf("on a kernel before 6.12 the slice is the default, got %q", got)
		}
		t.Skipf("kernel without custom slices: %s", got)
	}
	if got != "0.1 ms" {
		t.Fatalf("generator slice %q, want 0.1 ms", got)
	}
	if a, _ := attrOf(t, niced); a.nice != 3 || a.runtime != generatorSliceNs {
		t.Errorf("the niced thread: nice %d, slice %d ns; want nice 3 kept and the short slice", a.nice, a.runtime)
	}
	// Locked goroutines each need a thread of their own: more of them than there are threads,
	// and the runtime must clone new ones.
	var fresh []int
	for range len(existing) + 2 {
		tid := onOwnThread(t, func(int) {}, release)
		if !existing[tid] {
			fresh = append(fresh, tid)
		}
	}
	if len(fresh) == 0 {
		t.Fatalf("no new thread started: cannot tell whether new threads inherit the slice")
	}
	for tid := range threadIDs(t) {
		if a, exited := attrOf(t, tid); !exited && a.runtime != generatorSliceNs {
			t.Errorf("thread %d runs with a %d ns slice, want %d (new threads: %v)", tid, a.runtime, generatorSliceNs, fresh)
		}
	}
	restore()
	for tid := range threadIDs(t) {
		if a, exited := attrOf(t, tid); !exited && a.runtime != before.runtime {
			t.Errorf("thread %d has a %d ns slice after the run, want the default %d ns", tid, a.runtime, before.runtime)
		}
	}
	if a, _ := attrOf(t, niced); a.nice != 3 {
		t.Errorf("the niced thread's nice is %d after the run, want 3", a.nice)
	}
}
