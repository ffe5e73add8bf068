package agent

import (
	"os"
	"sort"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Runs lists the finished runs whose challenger is sha, oldest first: the earlier evidence a
// rerun of the same build is pooled with. Runs still going, or pruned by gc, are not listed.
func (h *Host) Runs(sha string) ([]contract.RunSummary, error) {
	entries, err := os.ReadDir(h.path("runs"))
	if err != nil {
		return nil, err
	}
	out := []contract.RunSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		req, err := h.runRequest(e.Name())
		var oc contract.Outcome
		if err != nil || req.Loadgen.Builds.ChallengerSHA != sha || readJSON(h.path("runs", e.Name(), "outcome.json"), &oc) != nil {
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
