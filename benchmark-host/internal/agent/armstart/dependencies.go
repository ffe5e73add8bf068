package armstart

import (
	"context"
	"fmt"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
)

// Dependencies starts the arm's service.dependencies, each ready before the next, after the
// fresh copy and before setup; the error ends with the failing dependency's own log.
func (s *Start) Dependencies(ctx context.Context) error {
	deps, err := s.Arm.StartDependencies(ctx, s.Spec, s.ports, s.Log)
	s.Record.Dependencies = deps
	if err != nil {
		return fmt.Errorf("%s %s: %v", s.Name, s.SHA, err)
	}
	for _, d := range deps {
		s.note("%s dependency %s ready after %.2f s (%s)", s.Name, d.Name, d.ReadySeconds, arm.DependencyLog(s.Log, d.Name).Path)
	}
	s.depsAtReady = s.Arm.DependencyUsage()
	return nil
}

// dependencyUsage records what each dependency used from ready until now, just before the arm
// stops.
func (s *Start) dependencyUsage() {
	now := s.Arm.DependencyUsage()
	for i, d := range s.Record.Dependencies {
		end, ok := now[d.Name]
		start, ok2 := s.depsAtReady[d.Name]
		if !ok || !ok2 {
			continue
		}
		rss := int64(end.RSSBytes)
		s.Record.Dependencies[i].RSSBytes = &rss
		if cpu, ok := end.CPUUsSince(start); ok {
			secs := cpu / 1e6
			s.Record.Dependencies[i].CPUSeconds = &secs
		}
	}
}
