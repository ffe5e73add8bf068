// Package hostinfo fingerprints the machine an experiment ran on, so that results from
// differently configured hosts are never silently compared.
package hostinfo

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Read collects the fingerprint recorded with every result; unreadable parts are left empty
// rather than failing.
func Read() contract.HostInfo {
	host, _ := os.Hostname()
	return contract.HostInfo{
		Hostname:   host,
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		CPUModel:   cpuModel(),
		Kernel:     readTrim("/proc/sys/kernel/osrelease"),
		LoadAvg:    LoadAvg(),
		Governor:   readTrim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
		MaxFreqKHz: readInt("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq"),
	}
}

// LoadAvg reads the 1, 5 and 15 minute load averages.
func LoadAvg() [3]float64 {
	var out [3]float64
	fields := strings.Fields(readTrim("/proc/loadavg"))
	for i := 0; i < 3 && i < len(fields); i++ {
		out[i], _ = strconv.ParseFloat(fields[i], 64)
	}
	return out
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(path string) int64 {
	n, _ := strconv.ParseInt(readTrim(path), 10, 64)
	return n
}
