package agent

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
)

// Calibration is the host state the A/A floor was measured in.
type Calibration struct {
	Governor   string `json:"cpu_governor"`
	MaxFreqKHz int64  `json:"cpu_max_freq_khz"`
	CPUModel   string `json:"cpu_model"`
}

// Preflight checks disk, memory and CPU state before a run of a kind (settle then waits for
// quiet CPUs). Refusals stop the run; flags are recorded in the result so the verdict can be
// read with them in mind, and a floor is never recorded from a flagged A/A run.
func (h *Host) Preflight(kind string) []contract.Finding {
	out := []contract.Finding{}
	add := func(check, status, format string, args ...any) {
		out = append(out, contract.Finding{Check: check, Status: status, Detail: fmt.Sprintf(format, args...)})
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(h.Root, &fs); err != nil {
		add("disk", contract.FindingRefuse, "cannot read free space of %s: %v", h.Root, err)
	} else {
		free := fs.Bavail * uint64(fs.Bsize)
		total := fs.Blocks * uint64(fs.Bsize)
		status := contract.FindingOK
		if free < h.MinFreeDisk || free*20 < total {
			status = contract.FindingRefuse
		}
		add("disk", status, "%.1f GiB free of %.1f GiB on %s (need %.1f GiB and 5%%)", gib(free), gib(total), h.Root, gib(h.MinFreeDisk))
	}
	if avail, ok := memAvailable(); !ok {
		add("memory", contract.FindingFlag, "MemAvailable unreadable")
	} else {
		status := contract.FindingOK
		if avail < h.MinFreeMemory {
			status = contract.FindingRefuse
		}
		add("memory", status, "%.2f GiB available (need %.2f GiB)", gib(avail), gib(h.MinFreeMemory))
	}
	if iso := h.isolation(); iso.champion != nil && iso.challenger != nil {
		out = append(out, h.armDiskFindings(iso)...)
	}
	info := hostinfo.Read()
	var cal Calibration
	switch err := readJSON(h.path("calibration.json"), &cal); {
	case os.IsNotExist(err):
		add("cpu", contract.FindingOK, "no calibration recorded yet (governor %q)", info.Governor)
	case err != nil:
		add("cpu", contract.FindingFlag, "calibration unreadable: %v", err)
	case (cal.Governor != info.Governor || cal.MaxFreqKHz != info.MaxFreqKHz || cal.CPUModel != info.CPUModel) && kind == contract.KindAA:
		// Not a flag: this run measures the new state, and a flag would keep its floor out.
		add("cpu", contract.FindingOK, "CPU state changed since the last floor (governor %q, was %q; max %d kHz, was %d; model %q, was %q): this A/A run recalibrates",
			info.Governor, cal.Governor, info.MaxFreqKHz, cal.MaxFreqKHz, info.CPUModel, cal.CPUModel)
	case cal.Governor != info.Governor || cal.MaxFreqKHz != info.MaxFreqKHz || cal.CPUModel != info.CPUModel:
		add("cpu", contract.FindingFlag, "CPU state differs from calibration: governor %q (calibrated %q), max %d kHz (calibrated %d), model %q (calibrated %q); recalibrate the A/A floor",
			info.Governor, cal.Governor, info.MaxFreqKHz, cal.MaxFreqKHz, info.CPUModel, cal.CPUModel)
	default:
		add("cpu", contract.FindingOK, "governor %q and max frequency match the calibration", info.Governor)
	}
	return out
}

// recordCalibration stores the CPU state a recorded floor was measured in.
func (h *Host) recordCalibration(info contract.HostInfo) error {
	return writeJSONAtomic(h.path("calibration.json"), Calibration{Governor: info.Governor, MaxFreqKHz: info.MaxFreqKHz, CPUModel: info.CPUModel})
}

func refusals(findings []contract.Finding) []string {
	return withStatus(findings, contract.FindingRefuse)
}

func flagged(findings []contract.Finding) []string { return withStatus(findings, contract.FindingFlag) }

func withStatus(findings []contract.Finding, status string) []string {
	var out []string
	for _, f := range findings {
		if f.Status == status {
			out = append(out, f.Check+": "+f.Detail)
		}
	}
	return out
}

func memAvailable() (uint64, bool) {
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

func gib(b uint64) float64 { return float64(b) / (1 << 30) }
