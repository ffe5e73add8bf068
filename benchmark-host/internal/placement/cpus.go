// Package placement names sets of CPUs ("0-1,8-9", the kernel's cpulist form) and pins the
// calling OS thread to one, so that a process started from that thread inherits the set.
package placement

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// CPUs is a set of CPU numbers; the zero value (empty) means "no placement".
type CPUs []int

// maxCPU bounds the numbers a list may name (the kernel's affinity mask here is 1024 bits).
const maxCPU = 1023

// Parse reads a cpulist: comma-separated numbers and ranges, e.g. "0-1,8,10-11". "" is none.
func Parse(list string) (CPUs, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > maxCPU {
			return nil, fmt.Errorf("%q is not a CPU list such as 0-1,8-9 (part %q)", list, part)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make(CPUs, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// String is the set in cpulist form, ranges collapsed: "0-3,8".
func (c CPUs) String() string {
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		} else {
			parts = append(parts, strconv.Itoa(c[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Overlaps reports whether the two sets share a CPU.
func (c CPUs) Overlaps(o CPUs) bool {
	in := map[int]bool{}
	for _, x := range c {
		in[x] = true
	}
	for _, x := range o {
		if in[x] {
			return true
		}
	}
	return false
}

// Online is the set of CPUs the kernel has online.
func Online() (CPUs, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return Parse(strings.TrimSpace(string(b)))
}

// Within reports the CPUs of c that are not in the set all.
func (c CPUs) Within(all CPUs) error {
	var missing CPUs
	in := map[int]bool{}
	for _, x := range all {
		in[x] = true
	}
	for _, x := range c {
		if !in[x] {
			missing = append(missing, x)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("CPUs %s are not online (online: %s)", missing, all)
	}
	return nil
}

// mask is the kernel's affinity bitmap for the set.
type mask [(maxCPU + 1) / 64]uint64

func (c CPUs) mask() mask {
	var m mask
	for _, x := range c {
		m[x/64] |= 1 << (x % 64)
	}
	return m
}

func (m *mask) cpus() CPUs {
	var out CPUs
	for i := 0; i <= maxCPU; i++ {
		if m[i/64]&(1<<(i%64)) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// ThreadAffinity is the calling OS thread's CPU set; the caller must have locked its
// goroutine to the thread.
func ThreadAffinity() (CPUs, error) {
	var m mask
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m))); e != 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", e)
	}
	return m.cpus(), nil
}

// PinThread sets the calling OS thread's CPU set; processes it starts inherit it. The caller
// must have locked its goroutine to the thread.
func PinThread(c CPUs) error {
	m := c.mask()
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m))); e != 0 {
		return fmt.Errorf("sched_setaffinity %s: %w", c, e)
	}
	return nil
}

// ProcessAffinity reads the CPU set a process may run on, from /proc/PID/status.
func ProcessAffinity(pid int) (CPUs, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return Parse(strings.TrimSpace(v))
		}
	}
	return nil, fmt.Errorf("/proc/%d/status: no Cpus_allowed_list", pid)
}
