package supervisor

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
)

// How a run takes the champion port and gives it back (docs/design/0013-symmetric-starts.md).
// Between runs the supervisor serves the champion on it. A run starts both arms itself, the same
// way, so it needs the port and the champion arm for its own fresh champion:
//
//  1. The run (holding the host lock) writes champion-lease.json, naming itself and its
//     process, and sends the supervisor SIGHUP (again every second until it is answered).
//  2. The supervisor stops its champion and records that it has yielded to that run
//     (champion.json yielded_to). It serves nothing while the lease's process lives.
//  3. When the run ends, however it ends, it stops both arms, removes the lease and waits
//     until the supervisor serves the champion again (starting a supervisor if none runs)
//     before it reports its outcome.
//  4. If the run's process dies instead (killed, a crash, a reboot), the supervisor sees its
//     lease outlive it within leasePoll, clears both arms of what the run left, and serves
//     again: a failed run never leaves the champion port dead while a supervisor runs.
//
// A supervisor started while a lease is live (by systemd, or by hand) yields at once. An older
// supervisor, which knows no lease, has another configuration and is replaced.

// leasePoll is how often a yielded supervisor checks that the run holding the port lives.
const leasePoll = 100 * time.Millisecond

// championLease names the run that holds the champion port.
type championLease struct {
	RunID string    `json:"run_id"`
	Pid   int       `json:"pid"` // the run's executor
	Since time.Time `json:"since"`
}

func (s *Supervisor) leasePath() string { return s.store.Path("champion-lease.json") }

// liveLease returns the lease if the run that holds it is alive.
func (s *Supervisor) liveLease() (championLease, bool) {
	var l championLease
	if store.ReadJSON(s.leasePath(), &l) != nil {
		return l, false
	}
	return l, detached.Alive(l.Pid, "execute")
}

// yield is the supervisor's side: with its champion stopped, it records that the run holds
// the port and waits until the lease ends or its run dies. It reports whether ctx ended.
func (d *daemon) yield(ctx context.Context, sha string, lease championLease) bool {
	record := func(l championLease) {
		d.record(championRecord{SHA: sha, YieldedTo: l.RunID})
		d.events.add("yielded", sha, fmt.Sprintf("the champion port to run %s (pid %d)", l.RunID, l.Pid))
	}
	record(lease)
	for {
		select {
		case <-ctx.Done():
			return true
		case <-d.reload:
		case <-time.After(leasePoll):
		}
		now, live := d.liveLease()
		switch {
		case live && now.RunID != lease.RunID:
			lease = now
			record(lease)
		case live:
		case now.RunID != "":
			// The run died holding the port: what it started in either arm is the supervisor's
			// to stop, before the champion arm is taken back.
			d.iso.Champion.Clear()
			d.iso.Challenger.Clear()
			os.Remove(d.leasePath())
			d.events.add("resumed", sha, fmt.Sprintf("run %s died holding the champion port; its arms were cleared", now.RunID))
			return false
		default:
			d.events.add("resumed", sha, fmt.Sprintf("run %s gave the champion port back", lease.RunID))
			return false
		}
	}
}

// yieldWait bounds how long a run waits for the supervisor to stop its champion (it may be in
// the middle of a start: copying the build, service.setup) before it stops the supervisor.
func yieldWait(champion store.State) time.Duration {
	return time.Minute + time.Duration(champion.Service.SetupTimeoutSeconds*float64(time.Second))
}

// TakePort is the run's side: it writes the lease and waits until no champion of the
// supervisor's runs, stopping a supervisor that does not answer (or one that knows no lease).
// It says how the port was handed over, for the run's log.
func (s *Supervisor) TakePort(runID string, st store.State) (string, error) {
	if err := store.WriteJSONAtomic(s.leasePath(), championLease{RunID: runID, Pid: os.Getpid(), Since: time.Now().UTC()}); err != nil {
		return "", err
	}
	rec, ok := s.running()
	if !ok {
		// No supervisor: the run's Install clears whatever the champion arm still runs.
		return "no champion supervisor was running", nil
	}
	if rec.Config != s.configLine() {
		return "the champion supervisor of an older configuration was stopped", s.stopDaemon(rec.Pid)
	}
	start := time.Now()
	var nudge time.Time
	for ; ; time.Sleep(10 * time.Millisecond) {
		now, ok := s.running()
		if !ok || now.Pid != rec.Pid || now.YieldedTo == runID {
			return fmt.Sprintf("the champion supervisor stopped its champion and yielded the port in %.2f s", time.Since(start).Seconds()), nil
		}
		if time.Since(start) > yieldWait(st) {
			return "the champion supervisor did not yield and was stopped", s.stopDaemon(rec.Pid)
		}
		if time.Since(nudge) > time.Second {
			syscall.Kill(rec.Pid, syscall.SIGHUP)
			nudge = time.Now()
		}
	}
}

// ReturnPort ends the lease and waits until the supervisor serves the champion again;
// the run's arms must be stopped first.
func (s *Supervisor) ReturnPort(ctx context.Context) error {
	if err := os.Remove(s.leasePath()); err != nil && !os.IsNotExist(err) {
		return err
	}
	return s.Reload(ctx)
}
