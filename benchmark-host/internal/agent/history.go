package agent

import (
	"os"
	"sort"
	"time"
)

// RunSummary is one finished run, as `runs` lists it.
type RunSummary struct {
	RunID         string    `json:"run_id"`
	Kind          string    `json:"kind"`
	Status        string    `json:"status"`
	ChampionSHA   string    `json:"champion_sha"`
	ChallengerSHA string    `json:"challenger_sha"`
	Workload      string    `json:"workload"`
	Rate          float64   `json:"rate"`
	Started       time.Time `json:"started"`
	Ended         time.Time `json:"ended"`
}

// Runs lists the finished runs whose challenger is sha, oldest first: the earlier evidence a
// rerun of the same build is pooled with. Runs still going, or pruned by gc, are not listed.
func (h *Host) Runs(sha string) ([]RunSummary, error) {
	entries, err := os.ReadDir(h.path("runs"))
	if err != nil {
		return nil, err
	}
	out := []RunSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var lp struct {
			Workload string            `json:"workload"`
			Rate     float64           `json:"rate"`
			Meta     map[string]string `json:"meta"`
		}
		var oc Outcome
		if readJSON(h.path("runs", e.Name(), "loadgen-plan.json"), &lp) != nil || lp.Meta["challenger_sha"] != sha {
			continue
		}
		if readJSON(h.path("runs", e.Name(), "outcome.json"), &oc) != nil {
			continue
		}
		out = append(out, RunSummary{
			RunID: e.Name(), Kind: lp.Meta["kind"], Status: oc.Status,
			ChampionSHA: lp.Meta["champion_sha"], ChallengerSHA: sha,
			Workload: lp.Workload, Rate: lp.Rate, Started: oc.Started, Ended: oc.Ended,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}
