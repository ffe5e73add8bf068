// Package promote changes the host's champion: deploy receives a build, promote makes a
// deployed build the champion once it passed its health check, and rollback restores an
// earlier champion. A change never cuts into a run (it takes the host lock) and never leaves
// the champion port dead.
package promote

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/armstart"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/isolation"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/supervisor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/timeline"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Champions changes the host's champion.
type Champions struct {
	cfg      config.Config
	store    *store.Store
	iso      *isolation.Lazy
	champion *supervisor.Supervisor
	timeline *timeline.Timeline
}

// New is the champion changes of a host, whose supervisor serves the champion they name, and
// whose history records each.
func New(cfg config.Config, st *store.Store, iso *isolation.Lazy, champion *supervisor.Supervisor, tl *timeline.Timeline) *Champions {
	return &Champions{cfg: cfg, store: st, iso: iso, champion: champion, timeline: tl}
}

// Promote makes a deployed release the champion. The new build must first pass its health
// check on the challenger port; then the supervisor is restarted on it. If the new champion
// then fails, the previous one is restored. spec, when non-nil, replaces the stored spec. The
// history records the promotion with the step it took: pull request pr's last gate (0: the
// build's own last gate).
func (c *Champions) Promote(ctx context.Context, sha string, spec *contract.ServiceSpec, pr int) (string, error) {
	return c.change("promote "+sha, func(old store.State) (string, error) {
		next := store.State{Champion: sha, Service: old.Service, History: old.History, Ancestors: old.Ancestors}
		if spec != nil {
			next.Service = *spec
		}
		if old.Champion == sha {
			// A promotion of the champion with another spec (its config changed) restarts the
			// supervisor on it, checked as any promotion is; the same spec changes nothing.
			service.FillDefaults(&next.Service)
			if contract.Digest(next.Service) == contract.Digest(old.Service) {
				return fmt.Sprintf("%s is already the champion", sha), c.champion.Ensure(ctx)
			}
			if err := c.swap(ctx, old, next); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s is already the champion; it serves with the new service spec now", sha), nil
		}
		if old.Champion != "" {
			next.History = append(append([]store.Reign{}, old.History...), store.Reign{SHA: old.Champion, Service: old.Service})
			next.History = next.History[max(0, len(next.History)-store.MaxHistory):]
		}
		next.Ancestors = c.timeline.Succession(old, sha)
		if err := c.swap(ctx, old, next); err != nil {
			return "", err
		}
		said := fmt.Sprintf("champion is now %s (previous %s)", sha, orNone(old.Champion))
		return said + c.recorded(c.timeline.Promoted(sha, old.Champion, pr)), nil
	})
}

// recorded is what a champion change adds about the history: the change stands whether or not
// the history could keep it, and says so.
func (c *Champions) recorded(note string, err error) string {
	if err != nil {
		return fmt.Sprintf("; not in the host's history: %v", err)
	}
	if note == "" {
		return ""
	}
	return "; " + note
}

// Rollback makes the previous champion the champion again, with the spec it ran with, and
// forgets the one it replaces: a second rollback goes one further back.
func (c *Champions) Rollback(ctx context.Context) (string, error) {
	return c.change("rollback", func(old store.State) (string, error) {
		n := len(old.History)
		if n == 0 {
			return "", errors.New("rollback: there is no previous champion")
		}
		last := old.History[n-1]
		next := store.State{Champion: last.SHA, Service: last.Service, History: old.History[:n-1], Ancestors: c.timeline.Succession(old, last.SHA)}
		if err := c.swap(ctx, old, next); err != nil {
			return "", err
		}
		said := fmt.Sprintf("champion is %s again (was %s; previous %s)", last.SHA, old.Champion, orNone(store.LastReign(next.History)))
		return said + c.recorded("", c.timeline.RolledBack(last.SHA, old.Champion)), nil
	})
}

// change runs change on the current state under the host lock, so a champion change
// never cuts into a run: it waits for the lock, up to LockWait.
func (c *Champions) change(what string, change func(old store.State) (string, error)) (string, error) {
	lock, err := c.store.Acquire(what, c.cfg.LockWait)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	old, err := c.store.LoadState()
	if err != nil {
		return "", err
	}
	return change(old)
}

// swap moves the host from state old to next, whose champion or spec differs.
func (c *Champions) swap(ctx context.Context, old, next store.State) error {
	sha := next.Champion
	if _, err := os.Stat(c.store.ReleaseDir(sha)); err != nil {
		return fmt.Errorf("release %s is not deployed (deploy champion %s first)", sha, sha)
	}
	if err := service.Validate(&next.Service); err != nil {
		return fmt.Errorf("no usable service spec for the champion (send one on stdin): %w", err)
	}
	// Health-check the new build beside the old champion first, in the challenger arm, started
	// as every arm starts; the lock keeps :challenger free.
	iso, err := c.iso.Arms()
	if err != nil {
		return err
	}
	ports, err := service.AllocatePorts(c.cfg.PortRange(), [][]string{contract.ServicePortNames(next.Service)}, c.cfg.MainPorts())
	if err != nil {
		return err
	}
	build := armstart.Build{SHA: sha, Release: c.store.ReleaseDir(sha), Spec: next.Service}
	// A log of this try alone: a refusal quotes its tail, which an earlier try's lines would pad.
	logPath := c.store.Path("logs", "promote-"+sha+".log")
	if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	cand := armstart.New(iso, iso.Challenger, "candidate champion", build, ports[0], c.cfg.ArmLog(logPath), func(string, ...any) {})
	err = armstart.Together(ctx, []*armstart.Start{cand})
	if serr := cand.Stop(); serr != nil {
		return serr
	}
	if err != nil {
		kept := "no champion yet"
		if old.Champion != "" {
			kept = "champion " + old.Champion + " unchanged"
		}
		return fmt.Errorf("promotion refused (%s): %v", kept, err)
	}
	// The history's clock: a champion's reign and its time as champion are one moment.
	next = next.Replacing(old, c.timeline.Now())
	if err := c.store.SaveState(next); err != nil {
		return err
	}
	if err := c.champion.Reload(ctx); err != nil {
		// Restore the previous champion, serving, before reporting the failure.
		if old.Champion == "" {
			// None to restore: the host has no champion, as before, and the supervisor started
			// for this one does not stay behind trying to start a build that is not the champion.
			err = fmt.Errorf("new champion %s failed: %w", sha, err)
			if serr := errors.Join(c.store.SaveState(old), c.champion.Abandon()); serr != nil {
				return errors.Join(err, serr)
			}
			return err
		}
		if serr := c.store.SaveState(old); serr != nil {
			return errors.Join(err, serr)
		}
		if rerr := c.champion.Reload(ctx); rerr != nil {
			return fmt.Errorf("new champion %s failed (%v) and restoring %s failed too: %w", sha, err, old.Champion, rerr)
		}
		return fmt.Errorf("new champion %s failed; previous champion %s restored and serving: %w", sha, old.Champion, err)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
