package hostinfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// MemAvailable is the kernel's estimate of the memory available to new work (/proc/meminfo
// MemAvailable), in bytes; false when unreadable.
func MemAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
