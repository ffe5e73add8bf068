package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

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
	// Config is the supervisor's configuration: a supervisor started with another one (by an
	// older install or an older perf-host) is replaced.
	Config string `json:"config"`
}

// ChampionDaemon serves the champion between runs, until ctx ends: it starts the build the
// state names in the champion arm, as every arm starts (a fresh copy, STATE_DIR, setup, its
// ports), restarts it if it exits, and on SIGHUP stops it and looks again: at the state (a
// promotion or a rollback) and at the lease (a run that takes the champion port for itself,
// and gives it back when it ends or dies). Every start, exit, stop and hand-over is appended to
// champion-events.jsonl. On a systemd host the perf-gate-champion unit runs this; elsewhere
// perf-host starts it detached. An flock makes a second supervisor exit at once.
func (h *Host) ChampionDaemon(ctx context.Context) error {
	// First, so that a SIGHUP is never lost once the supervisor runs (before this, perf-host
	// ignores it, and a run still sees its lease taken up by the poll in yield).
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	defer signal.Stop(reload)
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
		if lease, ok := h.liveLease(); ok {
			if h.yield(ctx, iso, st.Champion, lease, reload) {
				return nil
			}
			continue
		}
		s, err := h.serveChampion(iso.champion, st)
		if err != nil {
			h.championEvent("exited", st.Champion, err.Error())
			fmt.Fprintf(os.Stderr, "%s champion %s: %v; trying again in %v\n", time.Now().UTC().Format(time.RFC3339), st.Champion, err, backoff)
		} else {
			started := time.Now()
			select {
			case <-ctx.Done():
				h.championEvent("stopped", st.Champion, "the supervisor is stopping")
				return s.stop()
			case <-reload:
				h.championEvent("stopped", st.Champion, "reload (a promotion, a rollback or a run)")
				if err := s.stop(); err != nil {
					return err
				}
				backoff = time.Second
				continue
			case <-s.proc.Exited():
				h.championEvent("exited", st.Champion, s.proc.ExitError())
				fmt.Fprintf(os.Stderr, "%s champion %s %s; restarting in %v\n", time.Now().UTC().Format(time.RFC3339), st.Champion, s.proc.ExitError(), backoff)
			}
			if time.Since(started) > time.Minute {
				backoff = time.Second
			}
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

// serveChampion starts the state's champion in the champion arm and records it; a health
// check in the background marks when it serves.
func (h *Host) serveChampion(champ *arm.Arm, st State) (*armStart, error) {
	ports, err := service.AllocatePorts(h.portRange(), [][]string{contract.ServicePortNames(st.Service)}, h.mainPorts())
	if err != nil {
		return nil, err
	}
	s := newArmStart(champ, "champion", st.Champion, st.Service, ports[0], h.armLog("logs", "champion-"+st.Champion+".log"), daemonLog)
	for _, step := range []func() error{func() error { return s.install(h) }, func() error { return s.dependencies(context.Background()) }, s.setup, s.start} {
		err := step()
		s.flush()
		if err != nil {
			champ.Clear()
			return nil, err
		}
	}
	rec := championRecord{Pid: os.Getpid(), SHA: st.Champion, Started: time.Now().UTC(), ChampionPid: s.proc.Pid(), Ports: ports[0], Config: h.supervisorConfig()}
	if err := writeJSONAtomic(h.path("champion.json"), rec); err != nil {
		s.stop()
		return nil, err
	}
	h.championEvent("started", st.Champion, fmt.Sprintf("pid %d; %s", s.proc.Pid(), champ.Instance(ports[0]).Describe()))
	go func() {
		if s.healthy(context.Background()) == nil {
			h.championEvent("serving", st.Champion, fmt.Sprintf("pid %d healthy", s.proc.Pid()))
		}
	}()
	return s, nil
}

// daemonLog writes a line to the supervisor's log (champion-daemon.log).
func daemonLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// supervisorConfig is what a running supervisor must share with us to be kept. "lease" marks
// supervisors that hand the champion port to runs: an older one would restart its champion
// under a run's.
func (h *Host) supervisorConfig() string {
	return fmt.Sprintf("lease root=%s champion-user=%s port=%d service-ports=%s cgroup=%s arm-cpus=%s arm-max-procs=%d",
		h.Root, h.ChampionUser, h.ChampionPort, h.ServicePorts, h.Cgroup, h.ArmCPUs, h.ArmMaxProcs)
}

// portRange is --service-ports, checked by Init.
func (h *Host) portRange() service.PortRange {
	r, _ := service.ParsePortRange(h.ServicePorts)
	return r
}

// mainPorts are the champion and challenger ports, which no extra port may take.
func (h *Host) mainPorts() []int { return []int{h.ChampionPort, h.ChallengerPort} }

// EnsureChampion starts the champion supervisor if it is not running, and waits until the
// champion answers its health check on the champion port.
func (h *Host) EnsureChampion(ctx context.Context) error {
	st, err := h.LoadState()
	if err != nil {
		return err
	}
	if st.Champion == "" {
		return errors.New("no champion: deploy a release and promote it first")
	}
	timeout := time.Duration((st.Service.SetupTimeoutSeconds + st.Service.HealthTimeoutSeconds + float64(len(st.Service.Dependencies))*st.Service.ReadyTimeoutSeconds) * float64(time.Second))
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
	if err := service.WaitHealthy(ctx, h.ChampionPort, service.HealthOf(st.Service), time.Duration(st.Service.HealthTimeoutSeconds*float64(time.Second)), nil); err != nil {
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

// waitSupervising waits until the supervisor has (re)started the champion on sha itself.
func (h *Host) waitSupervising(sha string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rec, ok := h.championDaemon()
		if ok && rec.SHA == sha && rec.YieldedTo == "" && rec.ChampionPid != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the champion supervisor did not start %s within %v:\n%s", sha, timeout, service.LogTail(h.path("logs", "champion-daemon.log"), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *Host) startChampionDaemon() error {
	cmd, err := h.launchDetached(h.path("logs", "champion-daemon.log"), func(iso *isolation) *arm.Arm { return iso.supervisor }, nil, "champion-daemon")
	if err != nil {
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

// StopChampion stops the champion supervisor and its champion, and whatever either arm still
// runs: `perf-host stop`, in local mode only (`perf-gate run --local` calls it on exit). It
// takes the host lock, so it never cuts into a run.
func (h *Host) StopChampion() (string, error) {
	lock, err := h.Acquire("stop", h.LockWait)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	msg := "no champion supervisor was running"
	if rec, ok := h.championDaemon(); ok {
		if err := h.stopChampionDaemon(rec.Pid); err != nil {
			return "", err
		}
		msg = fmt.Sprintf("stopped the champion supervisor (pid %d) and champion %s", rec.Pid, rec.SHA)
	}
	iso, err := h.arms()
	if err != nil {
		return "", err
	}
	if err := errors.Join(iso.champion.Clear(), iso.challenger.Clear()); err != nil {
		return "", err
	}
	return msg + "; nothing of either arm runs", nil
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
