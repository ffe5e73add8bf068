package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

// Status is what `status` prints.
type Status struct {
	Version         string           `json:"perf_host_version"` // the release this perf-host was built from
	Champion        string           `json:"champion"`
	Previous        string           `json:"previous"`
	ChampionServing bool             `json:"champion_supervised"`
	Lock            *LockStatus      `json:"lock"`
	Floors          map[string]Floor `json:"floors"`
	DiskFreeBytes   uint64           `json:"disk_free_bytes"`
	MemAvailBytes   uint64           `json:"memory_available_bytes"`
	LoadAvg         [3]float64       `json:"load_avg"`
	Releases        []string         `json:"releases"`
	Ports           map[string]int   `json:"ports"`
}

// LockStatus names the holder of a held lock.
type LockStatus struct {
	Holder     string  `json:"holder"`
	Pid        int     `json:"pid"`
	Since      string  `json:"since"`
	AgeSeconds float64 `json:"age_seconds"`
}

// Floor is one A/A calibration of a workload at a rate.
type Floor struct {
	Workload    string     `json:"workload"`
	Rate        float64    `json:"rate"`
	HalfWidthMs float64    `json:"half_width_ms"`
	CIMs        [2]float64 `json:"ci_ms"`
	Pairs       int        `json:"pairs"`
	RunID       string     `json:"run_id"`
	Time        time.Time  `json:"time"`
}

// Status reports the host's state.
func (h *Host) Status() (Status, error) {
	st, err := h.LoadState()
	if err != nil {
		return Status{}, err
	}
	s := Status{Version: version.String(), Champion: st.Champion, Previous: lastReign(st.History), LoadAvg: hostinfo.LoadAvg(),
		Ports: map[string]int{"champion": h.ChampionPort, "challenger": h.ChallengerPort}}
	_, s.ChampionServing = h.championDaemon()
	if holder, held := h.CurrentHolder(); held {
		s.Lock = &LockStatus{Holder: holder.What, Pid: holder.Pid, Since: holder.Since.Format(time.RFC3339), AgeSeconds: time.Since(holder.Since).Seconds()}
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(h.Root, &fs) == nil {
		s.DiskFreeBytes = fs.Bavail * uint64(fs.Bsize)
	}
	s.MemAvailBytes, _ = memAvailable()
	s.Floors, _ = h.Floors()
	entries, _ := os.ReadDir(h.path("releases"))
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			s.Releases = append(s.Releases, e.Name())
		}
	}
	return s, nil
}

var floorKey = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// RecordFloor appends an A/A calibration (JSON on r) to the floor history.
func (h *Host) RecordFloor(runID string, r io.Reader) error {
	var f Floor
	dec := json.NewDecoder(io.LimitReader(r, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return refuse("floor: %v", err)
	}
	switch {
	case !floorKey.MatchString(f.Workload):
		return refuse("floor: workload: must be 1-64 characters of [A-Za-z0-9._-]")
	case !(f.Rate > 0):
		return refuse("floor: rate: must be a positive number")
	case !(f.HalfWidthMs >= 0) || f.HalfWidthMs > 1e6:
		return refuse("floor: half_width_ms: must be a non-negative number of ms")
	case f.Pairs < 2:
		return refuse("floor: pairs: must be at least 2")
	}
	// A floor stands for an A/A run that happened on this host: the run must exist, be an A/A
	// run, have ended well, and be of the workload and rate the floor names.
	var lp struct {
		Workload string  `json:"workload"`
		Rate     float64 `json:"rate"`
	}
	var oc Outcome
	if readJSON(h.path("runs", runID, "outcome.json"), &oc) != nil || readJSON(h.path("runs", runID, "loadgen-plan.json"), &lp) != nil {
		return refuse("floor: run %s: no finished run of that id on this host", runID)
	}
	switch {
	case oc.Kind != KindAA || oc.Status != "ok":
		return refuse("floor: run %s: a floor comes from an A/A run that ended ok; this one is kind %q, status %q", runID, oc.Kind, oc.Status)
	case lp.Workload != f.Workload || lp.Rate != f.Rate:
		return refuse("floor: run %s measured %s@%g, not %s@%g", runID, lp.Workload, lp.Rate, f.Workload, f.Rate)
	}
	f.RunID, f.Time = runID, time.Now().UTC()
	line, _ := json.Marshal(f)
	file, err := os.OpenFile(h.path("floors.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer file.Close()
	_, err = file.Write(append(line, '\n'))
	return err
}

// Floors returns the latest floor per "workload@rate".
func (h *Host) Floors() (map[string]Floor, error) {
	out := map[string]Floor{}
	history, err := h.FloorHistory()
	for _, fl := range history {
		out[fmt.Sprintf("%s@%g", fl.Workload, fl.Rate)] = fl
	}
	return out, err
}

// FloorHistory returns every recorded floor, oldest first.
func (h *Host) FloorHistory() ([]Floor, error) {
	out := []Floor{}
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
		var fl Floor
		if json.Unmarshal(s.Bytes(), &fl) == nil {
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
