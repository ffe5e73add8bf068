// Package agent is the benchmark host: it keeps the champion serving, accepts challengers,
// and runs one experiment at a time. All of its state lives under one root directory.
//
// Host wires the parts together, and perf-host dispatches each verb to its part; each part is
// a package of its own, and none of them imports this one:
//
//	config      the host's flags
//	store       the root directory: the champion pointer, the lock, releases, runs' records, audit log
//	isolation   a user, cgroup and CPUs per arm; the guards on network, disk and memory
//	armstart    how every arm starts a build (fresh copy, dependencies, setup, health)
//	supervisor  the champion supervisor, and the lease of the champion port to a run
//	run         a run: its request checked, the detached executor that measures, wait/result/abort
//	promote     deploy, promote, rollback
//	floor       the A/A floors and the CPU state they were measured in
//	timeline    main's history: gates, promotions, calibrations, drift runs; the champions kept for drift
//	status      the host's state for `status`
//	detached    perf-host's own long-lived processes; refused: a request refused as sent
package agent

import (
	"errors"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/promote"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/run"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/status"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/supervisor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/timeline"
)

// Host is the agent bound to its root directory: its parts, wired to each other. perf-host
// dispatches each verb to the part it belongs to.
type Host struct {
	Config     config.Config
	Store      *store.Store
	Isolation  *isolation.Lazy
	Supervisor *supervisor.Supervisor
	Runs       *run.Runs
	Champions  *promote.Champions
	Timeline   *timeline.Timeline
}

// New checks the configuration, lays out the root and binds the parts to it; exe is
// perf-host's own path, for the detached processes it starts.
func New(cfg config.Config, exe string) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := store.New(cfg.Root)
	if err := st.Init(); err != nil {
		return nil, err
	}
	tl, err := timeline.New(st, cfg.HistoryBoundBytes)
	if err != nil {
		return nil, err
	}
	iso := isolation.NewLazy(cfg, st.Path("arms"))
	launch := detached.Launcher{Exe: exe, Flags: cfg.Flags(), Dir: cfg.Root}
	champion := supervisor.New(cfg, st, iso, launch)
	return &Host{Config: cfg, Store: st, Isolation: iso, Supervisor: champion, Timeline: tl,
		Runs:      run.New(cfg, st, iso, champion, launch),
		Champions: promote.New(cfg, st, iso, champion, tl)}, nil
}

// Status reports the host's state.
func (h *Host) Status() (contract.Status, error) {
	return status.Read(h.Config, h.Store, h.Isolation, h.Supervisor)
}

// CheckIsolation sets the isolation up as a run does, its checks starting a program through
// arm-exec in each arm, under the host lock so that no run is using them: install.sh's report.
// status only describes it (docs/design/0032-status-starts-nothing-in-the-arms.md).
func (h *Host) CheckIsolation() (contract.Isolation, error) {
	lock, err := h.Store.Acquire("isolation check", h.Config.LockWait)
	if err != nil {
		return contract.Isolation{}, err
	}
	defer lock.Release()
	return h.Isolation.Get().Info, nil
}

// ExitCode maps a verb's error to perf-host's exit code (contract.ExitOK …).
func ExitCode(err error) int {
	var r *refused.Error
	switch {
	case err == nil:
		return contract.ExitOK
	case errors.Is(err, store.ErrBusy):
		return contract.ExitBusy
	case errors.Is(err, run.ErrNotFinished):
		return contract.ExitNotFinished
	case errors.As(err, &r):
		return contract.ExitRefused
	}
	return contract.ExitFailed
}
