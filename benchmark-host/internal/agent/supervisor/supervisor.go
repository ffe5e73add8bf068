// Package supervisor keeps the champion serving between runs: the champion supervisor (a
// detached perf-host champion-daemon, or systemd's perf-gate-champion unit) and how the other
// perf-host processes start, reload, stop and lease the champion port from it.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Supervisor is the champion supervisor as every perf-host process sees it: the one that runs
// it (Daemon) and the others, which start it, reload it, stop it and lease the champion port
// from it.
type Supervisor struct {
	cfg    config.Config
	store  *store.Store
	iso    *isolation.Lazy
	launch detached.Launcher
}

// New is the supervisor of a host; launch starts it detached when none runs.
func New(cfg config.Config, st *store.Store, iso *isolation.Lazy, launch detached.Launcher) *Supervisor {
	return &Supervisor{cfg: cfg, store: st, iso: iso, launch: launch}
}

// championRecord is written by the champion supervisor while it runs.
type championRecord struct {
	Pid         int       `json:"pid"` // the supervisor
	SHA         string    `json:"sha"`
	Started     time.Time `json:"started"`
	ChampionPid int       `json:"champion_pid"` // the champion service's main process; 0 while yielded
	// The run the supervisor has handed the champion port to (see lease.go); empty while it
	// serves the champion itself.
	YieldedTo string `json:"yielded_to,omitempty"`
	// The champion's extra ports (service.ports), by name.
	Ports map[string]int `json:"ports,omitempty"`
	// While the supervisor serves no champion and has not yielded (ChampionPid 0): why (its
	// last start failed, or the champion exited) and when; it tries again, with a backoff.
	Failed   string    `json:"failed,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`
	// The last start found a port of the champion held by another process: waiting for the
	// next try helps no one until that process lets go.
	PortTaken bool `json:"port_taken,omitempty"`
	// Config is the supervisor's configuration: a supervisor started with another one (by an
	// older install or an older perf-host) is replaced.
	Config string `json:"config"`
}

// configLine is what a running supervisor must share with us to be kept. "lease" marks
// supervisors that hand the champion port to runs: an older one would restart its champion
// under a run's.
func (s *Supervisor) configLine() string {
	c := s.cfg
	return fmt.Sprintf("lease root=%s champion-user=%s port=%d service-ports=%s cgroup=%s arm-cpus=%s arm-max-procs=%d",
		c.Root, c.ChampionUser, c.ChampionPort, c.ServicePorts, c.Cgroup, c.ArmCPUs, c.ArmMaxProcs)
}

// Ensure starts the champion supervisor if it is not running, and waits until the champion
// answers its health check on the champion port. A champion port held by another process fails
// it at once, with that reason (the supervisor still tries again, with its backoff).
func (s *Supervisor) Ensure(ctx context.Context) error {
	return s.ensure(ctx, time.Now(), true)
}

// ensure is Ensure for a caller that began at since: a failure the supervisor recorded before
// is not its answer. nudge: a supervisor waiting between two tries is asked to try again now
// (unless the caller has just sent it SIGHUP itself).
func (s *Supervisor) ensure(ctx context.Context, since time.Time, nudge bool) error {
	st, err := s.store.LoadState()
	if err != nil {
		return err
	}
	if st.Champion == "" {
		return errors.New("no champion: deploy a release and promote it first")
	}
	timeout := time.Duration((st.Service.SetupTimeoutSeconds + st.Service.HealthTimeoutSeconds + float64(len(st.Service.Dependencies))*st.Service.ReadyTimeoutSeconds) * float64(time.Second))
	rec, ok := s.running()
	if ok && rec.Config != s.configLine() {
		// Started by an older install or with other flags: its champion may run as another
		// user, in another cgroup. Replace it.
		if err := s.stopDaemon(rec.Pid); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		if err := s.start(); err != nil {
			return err
		}
	} else if nudge && rec.retrying() {
		// Between two tries: try again now, not after the backoff.
		syscall.Kill(rec.Pid, syscall.SIGHUP)
	}
	if err := s.waitSupervising(st.Champion, since, timeout); err != nil {
		return err
	}
	if err := service.WaitHealthy(ctx, s.cfg.ChampionPort, service.HealthOf(st.Service), time.Duration(st.Service.HealthTimeoutSeconds*float64(time.Second)), nil); err != nil {
		return fmt.Errorf("champion %s on :%d: %v\n%s", st.Champion, s.cfg.ChampionPort, err,
			service.LogTail(s.store.Path("logs", "champion-"+st.Champion+".log"), 20))
	}
	return nil
}

// Supervised reports whether a champion supervisor runs.
func (s *Supervisor) Supervised() bool {
	_, ok := s.running()
	return ok
}

// running returns the supervisor's record if it is alive.
func (s *Supervisor) running() (championRecord, bool) {
	var rec championRecord
	if store.ReadJSON(s.store.Path("champion.json"), &rec) != nil {
		return rec, false
	}
	return rec, detached.Alive(rec.Pid, "champion-daemon")
}

// retrying reports whether the supervisor serves no champion, its last start failed or its
// champion exited, and waits to try again.
func (rec championRecord) retrying() bool {
	return rec.ChampionPid == 0 && rec.YieldedTo == "" && rec.Failed != ""
}

// waitSupervising waits until the supervisor has (re)started the champion on sha itself. A try
// since then that found a port of the champion held by another process ends the wait at once.
func (s *Supervisor) waitSupervising(sha string, since time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rec, ok := s.running()
		if ok && rec.SHA == sha && rec.YieldedTo == "" && rec.ChampionPid != 0 {
			return nil
		}
		if ok && rec.SHA == sha && rec.retrying() && rec.PortTaken && !rec.FailedAt.Before(since) {
			return errors.New(rec.Failed)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the champion supervisor did not start %s within %v:\n%s", sha, timeout, service.LogTail(s.store.Path("logs", "champion-daemon.log"), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// start launches a supervisor, detached, in its own group.
func (s *Supervisor) start() error {
	iso, err := s.iso.Arms()
	var cmd *exec.Cmd
	if err == nil {
		cmd, err = s.launch.Launch(s.store.Path("logs", "champion-daemon.log"), iso.Supervisor, nil, "champion-daemon")
	}
	if err != nil {
		return fmt.Errorf("starting the champion supervisor: %w", err)
	}
	go cmd.Wait() // reap it if it exits while we are still running
	return nil
}

// stopDaemon asks a supervisor to stop (it stops its champion) and waits for it.
func (s *Supervisor) stopDaemon(pid int) error {
	syscall.Kill(pid, syscall.SIGTERM)
	for range 300 {
		if !detached.Alive(pid, "champion-daemon") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the champion supervisor (pid %d) did not stop within 15 s", pid)
}

// Abandon stops the champion supervisor, if one runs, and its champion: for a champion change
// that leaves the host no champion (a first promotion that failed), so that no supervisor stays
// behind trying to start a build that is not the champion. The caller holds the host lock.
func (s *Supervisor) Abandon() error {
	if rec, ok := s.running(); ok {
		return s.stopDaemon(rec.Pid)
	}
	return nil
}

// Reload asks a running supervisor to restart on the state's champion; with none running,
// Ensure starts one.
func (s *Supervisor) Reload(ctx context.Context) error {
	since := time.Now()
	if rec, ok := s.running(); ok {
		syscall.Kill(rec.Pid, syscall.SIGHUP)
		return s.ensure(ctx, since, false)
	}
	return s.ensure(ctx, since, true)
}

// Stop stops the champion supervisor and its champion, and whatever either arm still
// runs: `perf-host stop`, in local mode only (`perf-gate run --local` calls it on exit). It
// takes the host lock, so it never cuts into a run.
func (s *Supervisor) Stop() (string, error) {
	lock, err := s.store.Acquire("stop", s.cfg.LockWait)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	msg := "no champion supervisor was running"
	if rec, ok := s.running(); ok {
		if err := s.stopDaemon(rec.Pid); err != nil {
			return "", err
		}
		msg = fmt.Sprintf("stopped the champion supervisor (pid %d) and champion %s", rec.Pid, rec.SHA)
		if rec.retrying() {
			msg = fmt.Sprintf("stopped the champion supervisor (pid %d), which was trying again to start champion %s", rec.Pid, rec.SHA)
		}
	}
	iso, err := s.iso.Arms()
	if err != nil {
		return "", err
	}
	if err := errors.Join(iso.Champion.Clear(), iso.Challenger.Clear()); err != nil {
		return "", err
	}
	return msg + "; nothing of either arm runs", nil
}
