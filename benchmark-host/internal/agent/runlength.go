package agent

import "github.com/perf-gate/perf-gate/benchmark-host/contract"

// checkRunLength refuses a request that would hold the host longer than --max-run-seconds: the
// warm-up, every slice, and the challenger's health check at its longest. (The request's
// loadgen plan has its defaults filled, and an A/A request carries the champion's spec.)
func (h *Host) checkRunLength(req *contract.RunRequest) error {
	lp := req.Loadgen
	slices := float64(2*lp.Pairs) * lp.SliceSeconds
	total := lp.WarmupSeconds + slices + req.Service.HealthTimeoutSeconds
	if total > h.MaxRunSeconds {
		return refuse("plan: loadgen.pairs: %d pairs of %g s slices (%g s) + %g s warm-up + %g s health check would hold the host for %g s, over this host's --max-run-seconds %g; use fewer pairs or shorter slices",
			lp.Pairs, lp.SliceSeconds, slices, lp.WarmupSeconds, req.Service.HealthTimeoutSeconds, total, h.MaxRunSeconds)
	}
	return nil
}
