// Package hostinfo fingerprints the machine an experiment ran on, so that results from
// differently configured hosts are never silently compared.
package hostinfo

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Info is the fingerprint recorded with every result.
type Info struct {
	Hostname   string     `json:"hostname"`
	GoVersion  string     `json:"go_version"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	NumCPU     int        `json:"num_cpu"`
	CPUModel   string     `json:"cpu_model"`
	Kernel     string     `json:"kernel"`
	LoadAvg    [3]float64 `json:"load_avg"`
	Governor   string     `json:"cpu_governor,omitempty"`
	MaxFreqKHz int64      `json:"cpu_max_freq_khz,omitempty"`
}

// Read collects the fingerprint; unreadable parts are left empty rather than failing.
func Read() Info {
	host, _ := os.Hostname()
	return Info{
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
