// Package floor keeps the host's A/A floors (floors.jsonl): each recorded from an A/A run that
// ended well on this host, with the CPU state it was measured in (calibration.json), which
// later runs are checked against before they measure.
package floor

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
)

// Calibration is the host state the A/A floor was measured in.
type Calibration struct {
	Governor   string `json:"cpu_governor"`
	MaxFreqKHz int64  `json:"cpu_max_freq_khz"`
	CPUModel   string `json:"cpu_model"`
}

// ReadCalibration reads the CPU state of the last floor; os.IsNotExist when none was recorded.
func ReadCalibration(st *store.Store) (Calibration, error) {
	var cal Calibration
	return cal, store.ReadJSON(st.Path("calibration.json"), &cal)
}

// Record appends an A/A calibration (a contract.FloorRecord on r) to the floor history, and
// keeps the CPU state it was measured in as the one later runs are checked against. It returns
// the floor recorded.
func Record(st *store.Store, runID string, r io.Reader) (contract.FloorRecord, error) {
	var rec contract.FloorRecord
	if err := contract.Decode(io.LimitReader(r, 64<<10), &rec); err != nil {
		return rec, refused.Errorf("floor: %v", err)
	}
	if err := cmp.Or(
		checkField("workload", contract.Name.Check(rec.Workload)),
		checkField("rate", contract.Rate.Check(rec.Rate)),
		checkField("percentile", contract.Percentile.Check(rec.Percentile)),
		checkField("half_width_ms", contract.HalfWidthMs.Check(rec.HalfWidthMs)),
		checkField("pairs", contract.FloorPairs.Check(float64(rec.Pairs))),
	); err != nil {
		return rec, refused.Errorf("floor: %w", err)
	}
	result, err := measuredBy(st, runID, rec)
	if err != nil {
		return rec, err
	}
	f := contract.Floor{FloorRecord: rec, RunID: runID, Time: time.Now().UTC()}
	line, _ := json.Marshal(f)
	file, err := os.OpenFile(st.Path("floors.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return rec, err
	}
	defer file.Close()
	if _, err := file.Write(append(line, '\n')); err != nil {
		return rec, err
	}
	info := result.Host
	return rec, store.WriteJSONAtomic(st.Path("calibration.json"), Calibration{Governor: info.Governor, MaxFreqKHz: info.MaxFreqKHz, CPUModel: info.CPUModel})
}

// measuredBy is the result of the run a floor stands for: an A/A run that happened on this
// host, ended well, measured the workload and rate the floor names, and was not flagged.
func measuredBy(st *store.Store, runID string, rec contract.FloorRecord) (contract.HostResult, error) {
	var result contract.HostResult
	req, err := st.RunRequest(runID)
	if err != nil {
		return result, refused.Errorf("floor: run %s: no finished run of that id on this host", runID)
	}
	oc, err := st.RunOutcome(runID)
	if err != nil {
		return result, refused.Errorf("floor: run %s: no finished run of that id on this host", runID)
	}
	ran, floor := contract.Key(req.Loadgen.Workload, req.Loadgen.Rate), contract.Key(rec.Workload, rec.Rate)
	switch {
	case oc.Kind != contract.KindAA || oc.Status != contract.StatusOK:
		return result, refused.Errorf("floor: run %s: a floor comes from an A/A run that ended ok; this one is kind %q, status %q", runID, oc.Kind, oc.Status)
	case ran != floor:
		return result, refused.Errorf("floor: run %s measured %s, not %s", runID, ran, floor)
	case store.ReadJSON(st.Path("runs", runID, "result.json"), &result) != nil:
		return result, refused.Errorf("floor: run %s: its result is unreadable", runID)
	}
	// A floor measured on a disturbed host would excuse real regressions as noise for as long
	// as it stands (docs/design/0011-instrument-vouches-for-itself.md: a loaded host's ±23.8 ms hid
	// a +10.4 ms regression).
	if flags := contract.FindingsWith(result.Preflight, contract.FindingFlag); len(flags) > 0 {
		return result, refused.Errorf("floor: run %s ran with preflight flags (%s): a floor is never recorded from a flagged run; run the A/A again on a quiet host", runID, strings.Join(flags, "; "))
	}
	return result, nil
}

// Latest returns the latest floor per workload@rate/pNN (contract.FloorKey).
func Latest(st *store.Store) (map[string]contract.Floor, error) {
	out := map[string]contract.Floor{}
	history, err := History(st)
	for _, fl := range history {
		out[contract.FloorKey(fl.Workload, fl.Rate, fl.Percentile)] = fl
	}
	return out, err
}

// History returns every recorded floor, oldest first. A floor recorded before floors named
// their percentile is given contract.LegacyFloorPercentile, marked as assumed.
func History(st *store.Store) ([]contract.Floor, error) {
	out := []contract.Floor{}
	f, err := os.Open(st.Path("floors.jsonl"))
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var fl contract.Floor
		if json.Unmarshal(s.Bytes(), &fl) == nil {
			if fl.Percentile == 0 {
				fl.Percentile, fl.PercentileAssumed = contract.LegacyFloorPercentile, true
			}
			out = append(out, fl)
		}
	}
	return out, s.Err()
}

// checkField names the field whose value lies outside its limit.
func checkField(field string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}
