package agent

import (
	"fmt"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

// identity is what the run measured (contract.Identity): the arms as started, the placement,
// and the generator's settings.
func (e *execution) identity(iso *isolation, lp *plan.Plan, arms []*armStart, championSpecChanged bool) *contract.Identity {
	armID := func(s *armStart) contract.ArmIdentity {
		return contract.ArmIdentity{SHA: s.sha, Build: e.h.buildDigest(s.sha), Service: contract.Digest(s.spec)}
	}
	p := iso.info.Placement
	id := &contract.Identity{
		Champion:   armID(arms[0]),
		Challenger: armID(arms[1]),
		Placement:  fmt.Sprintf("%s: load generator on %s, arms on %s", p.Method, orAny(p.LoadgenCPUs), orAny(p.ArmCPUs)),
		Generator:  contract.GeneratorSettings(version.String(), lp.Plan),

		ChampionSpecChanged: championSpecChanged,
	}
	id.Seal()
	return id
}

// releaseMeta is what deploy records beside a release (releases/<sha>.json).
type releaseMeta struct {
	SHA    string `json:"sha"`
	Role   string `json:"role"`
	Digest string `json:"digest,omitempty"`
}

// buildDigest is the SHA-256 of the artifact a release was deployed from, "" when unknown.
func (h *Host) buildDigest(sha string) string {
	var m releaseMeta
	readJSON(h.releaseDir(sha)+".json", &m)
	return m.Digest
}
