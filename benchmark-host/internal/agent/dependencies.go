package agent

import (
	"context"
	"fmt"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
)

// dependencies starts the arm's service.dependencies, each ready before the next, after the
// fresh copy and before setup; the error ends with the failing dependency's own log.
func (s *armStart) dependencies(ctx context.Context) error {
	deps, err := s.arm.StartDependencies(ctx, s.spec, s.ports, s.log)
	s.record.Dependencies = deps
	if err != nil {
		return fmt.Errorf("%s %s: %v", s.name, s.sha, err)
	}
	for _, d := range deps {
		s.note("%s dependency %s ready after %.2f s (%s)", s.name, d.Name, d.ReadySeconds, arm.DependencyLog(s.log, d.Name).Path)
	}
	s.depsAtReady = s.arm.DependencyUsage()
	return nil
}

// dependencyUsage records what each dependency used from ready until now, just before the arm
// stops.
func (s *armStart) dependencyUsage() {
	now := s.arm.DependencyUsage()
	for i, d := range s.record.Dependencies {
		end, ok := now[d.Name]
		start, ok2 := s.depsAtReady[d.Name]
		if !ok || !ok2 {
			continue
		}
		rss := int64(end.RSSBytes)
		s.record.Dependencies[i].RSSBytes = &rss
		if cpu, ok := cpuUs(start, end); ok {
			secs := cpu / 1e6
			s.record.Dependencies[i].CPUSeconds = &secs
		}
	}
}
