package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Promote makes a deployed release the champion. The new build must first pass its health
// check on the challenger port; then the supervisor is restarted on it. If the new champion
// then fails, the previous one is restored. spec, when non-nil, replaces the stored spec.
func (h *Host) Promote(ctx context.Context, sha string, spec *contract.ServiceSpec) (string, error) {
	return h.changeChampion("promote "+sha, func(old State) (string, error) {
		next := State{Champion: sha, Service: old.Service, History: old.History}
		if spec != nil {
			next.Service = *spec
		}
		if old.Champion == sha {
			// A promotion of the champion with another spec (its config changed) restarts the
			// supervisor on it, checked as any promotion is; the same spec changes nothing.
			service.FillDefaults(&next.Service)
			if contract.Digest(next.Service) == contract.Digest(old.Service) {
				return fmt.Sprintf("%s is already the champion", sha), h.EnsureChampion(ctx)
			}
			if err := h.swapChampion(ctx, old, next); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s is already the champion; it serves with the new service spec now", sha), nil
		}
		if old.Champion != "" {
			next.History = append(append([]Reign{}, old.History...), Reign{SHA: old.Champion, Service: old.Service})
			next.History = next.History[max(0, len(next.History)-MaxHistory):]
		}
		if err := h.swapChampion(ctx, old, next); err != nil {
			return "", err
		}
		return fmt.Sprintf("champion is now %s (previous %s)", sha, orNone(old.Champion)), nil
	})
}

// Rollback makes the previous champion the champion again, with the spec it ran with, and
// forgets the one it replaces: a second rollback goes one further back.
func (h *Host) Rollback(ctx context.Context) (string, error) {
	return h.changeChampion("rollback", func(old State) (string, error) {
		n := len(old.History)
		if n == 0 {
			return "", errors.New("rollback: there is no previous champion")
		}
		last := old.History[n-1]
		next := State{Champion: last.SHA, Service: last.Service, History: old.History[:n-1]}
		if err := h.swapChampion(ctx, old, next); err != nil {
			return "", err
		}
		return fmt.Sprintf("champion is %s again (was %s; previous %s)", last.SHA, old.Champion, orNone(lastReign(next.History))), nil
	})
}

// changeChampion runs change on the current state under the host lock, so a champion change
// never cuts into a run: it waits for the lock, up to LockWait.
func (h *Host) changeChampion(what string, change func(old State) (string, error)) (string, error) {
	lock, err := h.Acquire(what, h.LockWait)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	old, err := h.LoadState()
	if err != nil {
		return "", err
	}
	return change(old)
}

// swapChampion moves the host from state old to next, whose champion or spec differs.
func (h *Host) swapChampion(ctx context.Context, old, next State) error {
	sha := next.Champion
	if _, err := os.Stat(h.releaseDir(sha)); err != nil {
		return fmt.Errorf("release %s is not deployed (deploy champion %s first)", sha, sha)
	}
	if err := service.Validate(&next.Service); err != nil {
		return fmt.Errorf("no usable service spec for the champion (send one on stdin): %w", err)
	}
	// Health-check the new build beside the old champion first, in the challenger arm, started
	// as every arm starts; the lock keeps :challenger free.
	iso, err := h.arms()
	if err != nil {
		return err
	}
	ports, err := service.AllocatePorts(h.portRange(), [][]string{contract.ServicePortNames(next.Service)}, h.mainPorts())
	if err != nil {
		return err
	}
	cand := newArmStart(iso.challenger, "candidate champion", sha, next.Service, ports[0], h.armLog("logs", "promote-"+sha+".log"), func(string, ...any) {})
	err = startTogether(ctx, h, []*armStart{cand})
	if serr := cand.stop(); serr != nil {
		return serr
	}
	if err != nil {
		kept := "no champion yet"
		if old.Champion != "" {
			kept = "champion " + old.Champion + " unchanged"
		}
		return fmt.Errorf("promotion refused (%s): %v", kept, err)
	}
	if err := h.saveState(next); err != nil {
		return err
	}
	if err := h.reloadChampion(ctx); err != nil {
		// Restore the previous champion, serving, before reporting the failure.
		if old.Champion == "" {
			return fmt.Errorf("new champion %s failed: %w", sha, err)
		}
		if serr := h.saveState(old); serr != nil {
			return errors.Join(err, serr)
		}
		if rerr := h.reloadChampion(ctx); rerr != nil {
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
