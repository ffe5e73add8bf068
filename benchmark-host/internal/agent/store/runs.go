package store

import (
	"fmt"
	"os"
	"sort"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// RunRequest reads a started run's validated request (runs/ID/run.json).
func (s *Store) RunRequest(runID string) (contract.RunRequest, error) {
	var req contract.RunRequest
	err := ReadJSON(s.Path("runs", runID, "run.json"), &req)
	if err == nil && req.Loadgen.Builds == nil {
		err = fmt.Errorf("run %s: its request names no builds", runID)
	}
	return req, err
}

// RunOutcome reads a finished run's outcome (runs/ID/outcome.json).
func (s *Store) RunOutcome(runID string) (contract.Outcome, error) {
	var out contract.Outcome
	return out, ReadJSON(s.Path("runs", runID, "outcome.json"), &out)
}

// Runs lists the finished runs whose challenger is sha, oldest first: the earlier evidence a
// rerun of the same build is pooled with. Runs still going, or pruned by gc, are not listed.
func (s *Store) Runs(sha string) ([]contract.RunSummary, error) {
	entries, err := os.ReadDir(s.Path("runs"))
	if err != nil {
		return nil, err
	}
	out := []contract.RunSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		req, err := s.RunRequest(e.Name())
		if err != nil || req.Loadgen.Builds.ChallengerSHA != sha {
			continue
		}
		oc, err := s.RunOutcome(e.Name())
		if err != nil {
			continue
		}
		b := req.Loadgen.Builds
		out = append(out, contract.RunSummary{
			RunID: e.Name(), Kind: b.Kind, Status: oc.Status, ChampionSHA: b.ChampionSHA, ChallengerSHA: b.ChallengerSHA,
			Workload: req.Loadgen.Workload, Rate: req.Loadgen.Rate, Started: oc.Started, Ended: oc.Ended,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}
