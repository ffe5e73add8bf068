// Package run is the host's experiments: a run request checked and started (run, aa), the
// detached executor that measures it (execute), and what the CI asks of it afterwards (wait,
// result, abort). A run holds the host lock from its start to its outcome.
package run

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/supervisor"
)

// Runs is the host's runs, and what a run needs of the host: its configuration, its store,
// its isolation and the champion supervisor it takes the champion port from.
type Runs struct {
	cfg      config.Config
	store    *store.Store
	iso      *isolation.Lazy
	champion *supervisor.Supervisor
	launch   detached.Launcher
}

// New is the runs of a host; launch starts each run's executor detached.
func New(cfg config.Config, st *store.Store, iso *isolation.Lazy, champion *supervisor.Supervisor, launch detached.Launcher) *Runs {
	return &Runs{cfg: cfg, store: st, iso: iso, champion: champion, launch: launch}
}

// maxRequestBytes bounds a run request read from stdin.
const maxRequestBytes = 1 << 20

// Start validates the run request, takes the host lock, and starts the experiment in a
// detached process that holds the lock until it ends, so the run survives the SSH connection.
func (r *Runs) Start(runID, kind string, stdin io.Reader) (err error) {
	if _, err := os.Stat(r.store.RunDir(runID)); err == nil {
		return refused.Errorf("run %s already exists; use a new run-id", runID)
	}
	req, err := requestCheck{r.cfg, r.store}.read(runID, kind, stdin)
	if err != nil {
		return err
	}
	lock, err := r.store.Acquire(kind+" "+runID, r.cfg.LockWait)
	if err != nil {
		return err
	}
	// Until the run has started, any failure frees the host again.
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	if err := os.MkdirAll(r.store.RunDir(runID), 0o755); err != nil {
		return err
	}
	if err := store.WriteJSONAtomic(r.store.Path("runs", runID, "run.json"), req); err != nil {
		return err
	}
	return r.startExecutor(runID, kind, lock)
}

// startExecutor starts the detached process that runs the experiment and hands it the lock.
func (r *Runs) startExecutor(runID, kind string, lock *store.Lock) error {
	// In the load generator's group, on its CPUs; it holds the lock from here on.
	iso, err := r.iso.Arms()
	var cmd *exec.Cmd
	if err == nil {
		cmd, err = r.launch.Launch(r.store.Path("runs", runID, "executor.log"), iso.Loadgen, []*os.File{lock.File()}, "execute", runID)
	}
	if err != nil {
		return fmt.Errorf("starting the run: %w", err)
	}
	lock.HandOver(kind+" "+runID, cmd.Process.Pid)
	lock.Detach()
	os.WriteFile(r.store.Path("runs", runID, "pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600)
	cmd.Process.Release()
	return nil
}
