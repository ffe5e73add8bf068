package run

import (
	"fmt"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/armstart"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

// identity is what the run measured (contract.Identity): the arms as started, the placement,
// and the generator's settings.
func (e *execution) identity(iso *isolation.Isolation, lp *plan.Plan, arms []*armstart.Start, championSpecChanged bool) *contract.Identity {
	armID := func(s *armstart.Start) contract.ArmIdentity {
		return contract.ArmIdentity{SHA: s.SHA, Build: e.store.BuildDigest(s.SHA), Service: contract.Digest(s.Spec)}
	}
	p := iso.Info.Placement
	id := &contract.Identity{
		Champion:   armID(arms[0]),
		Challenger: armID(arms[1]),
		Placement:  fmt.Sprintf("%s: load generator on %s, arms on %s", p.Method, isolation.OrAny(p.LoadgenCPUs), isolation.OrAny(p.ArmCPUs)),
		Generator:  contract.GeneratorSettings(version.String(), lp.Plan),

		ChampionSpecChanged: championSpecChanged,
	}
	id.Seal()
	return id
}
