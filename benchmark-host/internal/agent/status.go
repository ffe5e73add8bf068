package agent

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

// Status reports the host's state.
func (h *Host) Status() (contract.Status, error) {
	st, err := h.LoadState()
	if err != nil {
		return contract.Status{}, err
	}
	s := contract.Status{PerfHostVersion: version.String(), Champion: st.Champion, Previous: lastReign(st.History), LoadAvg: hostinfo.LoadAvg(),
		Releases: []string{}, Ports: map[string]int{contract.Champion: h.ChampionPort, contract.Challenger: h.ChallengerPort}}
	_, s.ChampionSupervised = h.championDaemon()
	s.Isolation = &h.isolation().info
	if holder, held := h.CurrentHolder(); held {
		s.Lock = &contract.LockStatus{Holder: holder.What, Pid: holder.Pid, Since: holder.Since.Format(time.RFC3339), AgeSeconds: time.Since(holder.Since).Seconds()}
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(h.Root, &fs) == nil {
		s.DiskFreeBytes = fs.Bavail * uint64(fs.Bsize)
	}
	s.MemoryAvailableBytes, _ = memAvailable()
	s.Floors, _ = h.Floors()
	entries, _ := os.ReadDir(h.path("releases"))
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			s.Releases = append(s.Releases, e.Name())
		}
	}
	return s, nil
}

// RecordFloor appends an A/A calibration (a contract.FloorRecord on r) to the floor history,
// and keeps the CPU state it was measured in as the one later runs are checked against.
func (h *Host) RecordFloor(runID string, r io.Reader) error {
	var rec contract.FloorRecord
	if err := contract.Decode(io.LimitReader(r, 64<<10), &rec); err != nil {
		return refuse("floor: %v", err)
	}
	if err := cmp.Or(
		checkField("workload", contract.Name.Check(rec.Workload)),
		checkField("rate", contract.Rate.Check(rec.Rate)),
		checkField("percentile", contract.Percentile.Check(rec.Percentile)),
		checkField("half_width_ms", contract.HalfWidthMs.Check(rec.HalfWidthMs)),
		checkField("pairs", contract.FloorPairs.Check(float64(rec.Pairs))),
	); err != nil {
		return refuse("floor: %w", err)
	}
	// A floor stands for an A/A run that happened on this host: the run must exist, be an A/A
	// run, have ended well, and be of the workload and rate the floor names.
	var oc contract.Outcome
	var result contract.HostResult
	req, err := h.runRequest(runID)
	if err != nil || readJSON(h.path("runs", runID, "outcome.json"), &oc) != nil {
		return refuse("floor: run %s: no finished run of that id on this host", runID)
	}
	ran, floor := contract.Key(req.Loadgen.Workload, req.Loadgen.Rate), contract.Key(rec.Workload, rec.Rate)
	switch {
	case oc.Kind != contract.KindAA || oc.Status != contract.StatusOK:
		return refuse("floor: run %s: a floor comes from an A/A run that ended ok; this one is kind %q, status %q", runID, oc.Kind, oc.Status)
	case ran != floor:
		return refuse("floor: run %s measured %s, not %s", runID, ran, floor)
	case readJSON(h.path("runs", runID, "result.json"), &result) != nil:
		return refuse("floor: run %s: its result is unreadable", runID)
	}
	// A floor measured on a disturbed host would excuse real regressions as noise for as long
	// as it stands (docs/design/0011-instrument-vouches-for-itself.md: a loaded host's ±23.8 ms hid
	// a +10.4 ms regression).
	if flags := flagged(result.Preflight); len(flags) > 0 {
		return refuse("floor: run %s ran with preflight flags (%s): a floor is never recorded from a flagged run; run the A/A again on a quiet host", runID, strings.Join(flags, "; "))
	}
	f := contract.Floor{FloorRecord: rec, RunID: runID, Time: time.Now().UTC()}
	line, _ := json.Marshal(f)
	file, err := os.OpenFile(h.path("floors.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer file.Close()
	if _, err := file.Write(append(line, '\n')); err != nil {
		return err
	}
	return h.recordCalibration(result.Host)
}

// Floors returns the latest floor per workload@rate/pNN (contract.FloorKey).
func (h *Host) Floors() (map[string]contract.Floor, error) {
	out := map[string]contract.Floor{}
	history, err := h.FloorHistory()
	for _, fl := range history {
		out[contract.FloorKey(fl.Workload, fl.Rate, fl.Percentile)] = fl
	}
	return out, err
}

// FloorHistory returns every recorded floor, oldest first. A floor recorded before floors
// named their percentile is given contract.LegacyFloorPercentile, marked as assumed.
func (h *Host) FloorHistory() ([]contract.Floor, error) {
	out := []contract.Floor{}
	f, err := os.Open(h.path("floors.jsonl"))
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

// GC prunes old releases and runs; the champion, the earlier champions a rollback may restore,
// and the newest KeepReleases releases and KeepRuns runs stay.
func (h *Host) GC() ([]string, error) {
	lock, err := h.Acquire("gc", h.LockWait)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	st, err := h.LoadState()
	if err != nil {
		return nil, err
	}
	var removed []string
	prune := func(dir string, keep int, protect func(string) bool) {
		entries, _ := os.ReadDir(h.path(dir))
		type aged struct {
			name string
			mod  time.Time
		}
		var list []aged
		for _, e := range entries {
			if info, err := e.Info(); err == nil && e.IsDir() {
				list = append(list, aged{e.Name(), info.ModTime()})
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].mod.After(list[j].mod) })
		for i, a := range list {
			if (i < keep && !strings.HasPrefix(a.name, ".")) || protect(a.name) {
				continue
			}
			os.RemoveAll(h.path(dir, a.name))
			os.Remove(h.path(dir, a.name) + ".json")
			removed = append(removed, dir+"/"+a.name)
		}
	}
	prune("releases", h.KeepReleases, st.protected)
	prune("runs", h.KeepRuns, func(string) bool { return false })
	return removed, nil
}

// checkField names the field whose value lies outside its limit.
func checkField(field string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}
