package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/armstart"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// daemon is the supervisor's own process.
type daemon struct {
	*Supervisor
	iso    *isolation.Isolation
	reload <-chan os.Signal // SIGHUP: look at the state and the lease again
	events eventLog
}

// Daemon serves the champion between runs, until ctx ends: it starts the build the
// state names in the champion arm, as every arm starts (a fresh copy, STATE_DIR, setup, its
// ports), restarts it if it exits, and on SIGHUP stops it and looks again: at the state (a
// promotion or a rollback) and at the lease (a run that takes the champion port for itself,
// and gives it back when it ends or dies). Every start, exit, stop and hand-over is appended to
// champion-events.jsonl. On a systemd host the perf-gate-champion unit runs this; elsewhere
// perf-host starts it detached. An flock makes a second supervisor exit at once.
func (s *Supervisor) Daemon(ctx context.Context) error {
	// First, so that a SIGHUP is never lost once the supervisor runs (before this, perf-host
	// ignores it, and a run still sees its lease taken up by the poll in yield).
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	defer signal.Stop(reload)
	lockf, err := os.OpenFile(s.store.Path("champion.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lockf.Close()
	if err := syscall.Flock(int(lockf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintln(os.Stderr, "another champion supervisor is running; exiting")
		return nil
	}
	iso, err := s.iso.Arms()
	if err != nil {
		return err
	}
	defer os.Remove(s.store.Path("champion.json"))
	d := &daemon{Supervisor: s, iso: iso, reload: reload, events: eventLog{s.store.Path("champion-events.jsonl")}}
	return d.run(ctx)
}

// run serves the state's champion, yields the port to runs, and restarts the champion with a
// growing backoff when it exits.
func (d *daemon) run(ctx context.Context) error {
	backoff := time.Second
	for {
		st, err := d.store.LoadState()
		if err != nil {
			return err
		}
		if st.Champion == "" {
			return errors.New("no champion: deploy a release and promote it first")
		}
		if lease, ok := d.liveLease(); ok {
			if d.yield(ctx, st.Champion, lease) {
				return nil
			}
			continue
		}
		// Recorded before the start, which may take a while (a copy, dependencies, setup):
		// the supervisor runs, whether or not its champion ever starts, and stop finds it.
		d.record(championRecord{SHA: st.Champion})
		s, err := d.serve(st)
		if err != nil {
			var taken *service.PortTakenError
			d.record(championRecord{SHA: st.Champion, Failed: err.Error(), FailedAt: time.Now().UTC(), PortTaken: errors.As(err, &taken)})
			d.events.add("exited", st.Champion, err.Error())
			fmt.Fprintf(os.Stderr, "%s champion %s: %v; trying again in %v\n", time.Now().UTC().Format(time.RFC3339), st.Champion, err, backoff)
		} else {
			started := time.Now()
			select {
			case <-ctx.Done():
				d.events.add("stopped", st.Champion, "the supervisor is stopping")
				return s.Stop()
			case <-d.reload:
				d.events.add("stopped", st.Champion, "reload (a promotion, a rollback or a run)")
				if err := s.Stop(); err != nil {
					return err
				}
				backoff = time.Second
				continue
			case <-s.Proc.Exited():
				d.record(championRecord{SHA: st.Champion, Failed: "the champion " + s.Proc.ExitError(), FailedAt: time.Now().UTC()})
				d.events.add("exited", st.Champion, s.Proc.ExitError())
				fmt.Fprintf(os.Stderr, "%s champion %s %s; restarting in %v\n", time.Now().UTC().Format(time.RFC3339), st.Champion, s.Proc.ExitError(), backoff)
			}
			if time.Since(started) > time.Minute {
				backoff = time.Second
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.reload:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// serve starts the state's champion in the champion arm and records it; a health check in
// the background marks when it serves.
func (d *daemon) serve(st store.State) (*armstart.Start, error) {
	champ := d.iso.Champion
	ports, err := service.AllocatePorts(d.cfg.PortRange(), [][]string{contract.ServicePortNames(st.Service)}, d.cfg.MainPorts())
	if err != nil {
		return nil, err
	}
	build := armstart.Build{SHA: st.Champion, Release: d.store.ReleaseDir(st.Champion), Spec: st.Service}
	s := armstart.New(d.iso, champ, "champion", build, ports[0], d.cfg.ArmLog(d.store.Path("logs", "champion-"+st.Champion+".log")), daemonLog)
	for _, step := range []func() error{s.Install, func() error { return s.Dependencies(context.Background()) }, s.Setup, s.Launch} {
		err := step()
		s.Flush()
		if err != nil {
			champ.Clear()
			return nil, err
		}
	}
	if err := d.record(championRecord{SHA: st.Champion, ChampionPid: s.Proc.Pid(), Ports: ports[0]}); err != nil {
		s.Stop()
		return nil, err
	}
	d.events.add("started", st.Champion, fmt.Sprintf("pid %d; %s", s.Proc.Pid(), champ.Instance(ports[0]).Describe()))
	go func() {
		if s.Healthy(context.Background()) == nil {
			d.events.add("serving", st.Champion, fmt.Sprintf("pid %d healthy", s.Proc.Pid()))
		}
	}()
	return s, nil
}

// record writes champion.json, the supervisor's record of itself and of its champion.
func (d *daemon) record(rec championRecord) error {
	rec.Pid, rec.Config = os.Getpid(), d.configLine()
	if rec.Started.IsZero() {
		rec.Started = time.Now().UTC()
	}
	return store.WriteJSONAtomic(d.store.Path("champion.json"), rec)
}

// daemonLog writes a line to the supervisor's log (champion-daemon.log).
func daemonLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}
