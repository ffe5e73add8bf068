package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// championRecord is written by the champion supervisor while it runs.
type championRecord struct {
	Pid         int       `json:"pid"` // the supervisor
	SHA         string    `json:"sha"`
	Started     time.Time `json:"started"`
	ChampionPid int       `json:"champion_pid"` // the champion service's main process
	// Config is the supervisor's isolation configuration: a supervisor started with another
	// one (by an older install) is replaced, so that the champion runs as its arm's user.
	Config string `json:"config"`
}

// ChampionDaemon supervises the champion until ctx ends: it installs the build the state
// names into the champion arm's working directory and starts it on the champion port, restarts
// it if it exits, and on SIGHUP restarts it on whatever the state names now (a promotion).
// Every start, exit and return to service is appended to champion-events.jsonl, which a run
// reads to invalidate the slices a restart touched. On a systemd host the perf-gate-champion
// unit runs this; elsewhere perf-host starts it detached. An flock makes a second supervisor
// exit at once.
func (h *Host) ChampionDaemon(ctx context.Context) error {
	lockf, err := os.OpenFile(h.path("champion.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lockf.Close()
	if err := syscall.Flock(int(lockf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintln(os.Stderr, "another champion supervisor is running; exiting")
		return nil
	}
	iso, err := h.arms()
	if err != nil {
		return err
	}
	champ := iso.champion
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	defer signal.Stop(reload)
	defer os.Remove(h.path("champion.json"))
	backoff := time.Second
	for {
		st, err := h.LoadState()
		if err != nil {
			return err
		}
		if st.Champion == "" {
			return errors.New("no champion: deploy a release and promote it first")
		}
		// A fresh copy each start; Install first stops whatever the arm still runs (what a
		// crashed champion or a killed supervisor left behind).
		if err := champ.Install(h.releaseDir(st.Champion)); err != nil {
			return err
		}
		p, err := champ.StartService("champion", st.Service, h.path("logs", "champion-"+st.Champion+".log"))
		if err != nil {
			return err
		}
		rec := championRecord{Pid: os.Getpid(), SHA: st.Champion, Started: time.Now().UTC(), ChampionPid: p.Pid(), Config: h.supervisorConfig()}
		if err := writeJSONAtomic(h.path("champion.json"), rec); err != nil {
			champ.Stop(p, 10*time.Second)
			return err
		}
		h.championEvent("started", st.Champion, fmt.Sprintf("pid %d", p.Pid()))
		go func() {
			if service.WaitHealthy(ctx, h.ChampionPort, st.Service.HealthPath, time.Duration(st.Service.HealthTimeoutSeconds*float64(time.Second)), p.Exited()) == nil {
				h.championEvent("serving", st.Champion, fmt.Sprintf("pid %d healthy", p.Pid()))
			}
		}()
		started := time.Now()
		select {
		case <-ctx.Done():
			h.championEvent("stopped", st.Champion, "the supervisor is stopping")
			return champ.Stop(p, 10*time.Second)
		case <-reload:
			h.championEvent("stopped", st.Champion, "reload (a promotion or rollback)")
			if err := champ.Stop(p, 10*time.Second); err != nil {
				return err
			}
			backoff = time.Second
			continue
		case <-p.Exited():
			h.championEvent("exited", st.Champion, p.ExitError())
			fmt.Fprintf(os.Stderr, "%s champion %s %s; restarting in %v\n", time.Now().UTC().Format(time.RFC3339), st.Champion, p.ExitError(), backoff)
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-reload:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// supervisorConfig is what a running supervisor must share with us to be kept.
func (h *Host) supervisorConfig() string {
	return fmt.Sprintf("root=%s champion-user=%s port=%d cgroup=%s arm-cpus=%s arm-max-procs=%d",
		h.Root, h.ChampionUser, h.ChampionPort, h.Cgroup, h.ArmCPUs, h.ArmMaxProcs)
}

// EnsureChampion starts the champion supervisor if it is not running, and waits until the
// champion answers its health check.
func (h *Host) EnsureChampion(ctx context.Context) error {
	st, err := h.LoadState()
	if err != nil {
		return err
	}
	if st.Champion == "" {
		return errors.New("no champion: deploy a release and promote it first")
	}
	timeout := time.Duration(st.Service.HealthTimeoutSeconds * float64(time.Second))
	rec, ok := h.championDaemon()
	if ok && rec.Config != h.supervisorConfig() {
		// Started by an older install or with other flags: its champion may run as another
		// user, in another cgroup. Replace it.
		if err := h.stopChampionDaemon(rec.Pid); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		if err := h.startChampionDaemon(); err != nil {
			return err
		}
	}
	if err := h.waitSupervising(st.Champion, timeout); err != nil {
		return err
	}
	if err := service.WaitHealthy(ctx, h.ChampionPort, st.Service.HealthPath, timeout, nil); err != nil {
		return fmt.Errorf("champion %s on :%d: %v\n%s", st.Champion, h.ChampionPort, err,
			service.LogTail(h.path("logs", "champion-"+st.Champion+".log"), 20))
	}
	return nil
}

// championDaemon returns the supervisor's record if it is alive.
func (h *Host) championDaemon() (championRecord, bool) {
	var rec championRecord
	if readJSON(h.path("champion.json"), &rec) != nil {
		return rec, false
	}
	return rec, alive(rec.Pid, "champion-daemon")
}

// waitSupervising waits until the supervisor has (re)started the champion on sha.
func (h *Host) waitSupervising(sha string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rec, ok := h.championDaemon()
		if ok && rec.SHA == sha {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the champion supervisor did not start %s within %v:\n%s", sha, timeout, service.LogTail(h.path("logs", "champion-daemon.log"), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *Host) startChampionDaemon() error {
	logf, err := os.OpenFile(h.path("logs", "champion-daemon.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(h.Exe, append([]string{"champion-daemon"}, h.Flags()...)...)
	cmd.Dir = h.Root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	iso, err := h.arms()
	if err != nil {
		return err
	}
	if err := iso.supervisor.Launch(cmd); err != nil {
		return fmt.Errorf("starting the champion supervisor: %w", err)
	}
	go cmd.Wait() // reap it if it exits while we are still running
	return nil
}

// stopChampionDaemon asks a supervisor to stop (it stops its champion) and waits for it.
func (h *Host) stopChampionDaemon(pid int) error {
	syscall.Kill(pid, syscall.SIGTERM)
	for range 300 {
		if !alive(pid, "champion-daemon") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the champion supervisor (pid %d) did not stop within 15 s", pid)
}

// reloadChampion asks a running supervisor to restart on the state's champion; with none
// running, EnsureChampion starts one.
func (h *Host) reloadChampion(ctx context.Context) error {
	if rec, ok := h.championDaemon(); ok {
		syscall.Kill(rec.Pid, syscall.SIGHUP)
	}
	return h.EnsureChampion(ctx)
}

// alive reports whether pid runs (and is not a zombie) and, if want is set, whether its
// command line contains it (a recycled pid is not our process).
func alive(pid int, want string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	if want == "" {
		return true
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Contains(string(cmdline), want)
}

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
			return fmt.Sprintf("%s is already the champion", sha), h.EnsureChampion(ctx)
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

// swapChampion moves the host from state old to next, whose champion differs.
func (h *Host) swapChampion(ctx context.Context, old, next State) error {
	sha := next.Champion
	if _, err := os.Stat(h.releaseDir(sha)); err != nil {
		return fmt.Errorf("release %s is not deployed (deploy champion %s first)", sha, sha)
	}
	if err := service.Validate(&next.Service); err != nil {
		return fmt.Errorf("no usable service spec for the champion (send one on stdin): %w", err)
	}
	// Health-check the new build beside the old champion first, in the challenger arm; the
	// lock keeps :challenger free.
	iso, err := h.arms()
	if err != nil {
		return err
	}
	logPath := h.path("logs", "promote-"+sha+".log")
	if err := iso.challenger.Install(h.releaseDir(sha)); err != nil {
		return err
	}
	cand, err := iso.challenger.StartService("candidate champion", next.Service, logPath)
	if err != nil {
		return err
	}
	err = cand.WaitHealthy(ctx, next.Service.HealthPath, time.Duration(next.Service.HealthTimeoutSeconds*float64(time.Second)))
	if serr := iso.challenger.Stop(cand, 10*time.Second); serr != nil {
		return serr
	}
	if err != nil {
		return fmt.Errorf("promotion refused: %s %v; champion %s unchanged\n%s", sha, err, old.Champion, service.LogTail(logPath, 20))
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
