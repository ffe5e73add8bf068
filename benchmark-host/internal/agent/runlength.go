package agent

import "github.com/perf-gate/perf-gate/benchmark-host/contract"

// checkRunLength refuses a request that would hold the host longer than --max-run-seconds: the
// warm-up, every slice, and the start of the arms (their dependencies, setups and health checks, which run
// side by side, both arms with the request's spec). The request's loadgen plan has its
// defaults filled.
func (h *Host) checkRunLength(req *contract.RunRequest) error {
	lp := req.Loadgen
	slices := float64(2*lp.Pairs) * lp.SliceSeconds
	start := startSeconds(req.Service)
	total := lp.WarmupSeconds + slices + start
	if total > h.MaxRunSeconds {
		return refuse("plan: loadgen.pairs: %d pairs of %g s slices (%g s) + %g s warm-up + %g s to start the arms (dependencies, setup and health check) would hold the host for %g s, over this host's --max-run-seconds %g; use fewer pairs or shorter slices",
			lp.Pairs, lp.SliceSeconds, slices, lp.WarmupSeconds, start, total, h.MaxRunSeconds)
	}
	return nil
}

// startSeconds is the longest an arm may take to start: each dependency's ready wait, its
// setup, then its health check.
func startSeconds(s contract.ServiceSpec) float64 {
	setup := 0.0
	if len(s.Setup) > 0 {
		setup = s.SetupTimeoutSeconds
	}
	return float64(len(s.Dependencies))*s.ReadyTimeoutSeconds + setup + s.HealthTimeoutSeconds
}
