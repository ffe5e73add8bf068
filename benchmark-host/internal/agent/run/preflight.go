package run

import (
	"fmt"
	"os"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/floor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
)

// hostChecks checks disk, memory and CPU state before a run of a kind (settle then waits for
// quiet CPUs). Refusals stop the run; flags are recorded in the result so the verdict can be
// read with them in mind, and a floor is never recorded from a flagged A/A run.
func hostChecks(cfg config.Config, st *store.Store, iso *isolation.Isolation, kind string) []contract.Finding {
	out := []contract.Finding{}
	add := func(check, status, format string, args ...any) {
		out = append(out, contract.Finding{Check: check, Status: status, Detail: fmt.Sprintf(format, args...)})
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(cfg.Root, &fs); err != nil {
		add("disk", contract.FindingRefuse, "cannot read free space of %s: %v", cfg.Root, err)
	} else {
		free := fs.Bavail * uint64(fs.Bsize)
		total := fs.Blocks * uint64(fs.Bsize)
		status := contract.FindingOK
		if free < cfg.MinFreeDisk || free*20 < total {
			status = contract.FindingRefuse
		}
		add("disk", status, "%.1f GiB free of %.1f GiB on %s (need %.1f GiB and 5%%)", gib(free), gib(total), cfg.Root, gib(cfg.MinFreeDisk))
	}
	if avail, ok := hostinfo.MemAvailable(); !ok {
		add("memory", contract.FindingFlag, "MemAvailable unreadable")
	} else {
		status := contract.FindingOK
		if avail < cfg.MinFreeMemory {
			status = contract.FindingRefuse
		}
		add("memory", status, "%.2f GiB available (need %.2f GiB)", gib(avail), gib(cfg.MinFreeMemory))
	}
	if iso.Champion != nil && iso.Challenger != nil {
		out = append(out, iso.ArmDiskFindings(cfg)...)
		out = append(out, iso.MemoryFinding(), iso.PrivateMountsFinding())
	}
	info := hostinfo.Read()
	cal, err := floor.ReadCalibration(st)
	switch {
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

func gib(b uint64) float64 { return float64(b) / (1 << 30) }
