package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
)

// watch samples the host every few milliseconds while a run goes: the champion's process
// state, the challenger user's processes, their cgroups and CPUs.
type watch struct {
	h    *installedHost
	stop chan struct{}
	done chan struct{}

	mu              sync.Mutex
	championStopped int      // samples that found the champion stopped (state T)
	maxTasks        int      // most tasks (threads) the challenger's user ran at once
	outsideCgroup   []string // challenger processes seen outside the challenger's group
	cmdlines        map[string]bool
	championCPUs    string
	challengerCPUs  string
	executorCPUs    string
}

func (h *installedHost) startWatch(runID string) *watch {
	w := &watch{h: h, stop: make(chan struct{}), done: make(chan struct{}), cmdlines: map[string]bool{}}
	challenger, _ := arm.Lookup(h.challengerUser)
	champion, _ := arm.Lookup(h.championUser)
	group := filepath.Join(h.cgroup, "challenger")
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			// The champion's service, whether the supervisor's or the run's own (symmetric start).
			champions := arm.OfUser(champion.UID)
			procs := arm.OfUser(challenger.UID)
			w.mu.Lock()
			for _, p := range champions {
				if p.State == 'T' {
					w.championStopped++
				}
				if p.Cmdline == "./service" && w.championCPUs == "" {
					cpus, _ := placement.ProcessAffinity(p.Pid)
					w.championCPUs = cpus.String()
				}
			}
			tasks := 0
			for _, p := range procs {
				w.cmdlines[p.Cmdline] = true
				entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Pid))
				tasks += len(entries)
				// A process that has just exited reads as nothing, one being killed as in the
				// group removed after the kill ("(deleted)": a populated group cannot be removed).
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.Pid))
				inside := strings.Contains(string(cg), "0::"+strings.TrimPrefix(group, mountOf(h.cgroup))+"\n")
				if h.cgroup != "" && len(cg) > 0 && !inside && !strings.Contains(string(cg), "(deleted)") {
					w.outsideCgroup = append(w.outsideCgroup, fmt.Sprintf("%d %s in %q", p.Pid, p.Cmdline, cg))
				}
				if p.Cmdline == "./service" && w.challengerCPUs == "" {
					cpus, _ := placement.ProcessAffinity(p.Pid)
					w.challengerCPUs = cpus.String()
				}
			}
			w.maxTasks = max(w.maxTasks, tasks)
			if w.executorCPUs == "" {
				if b, err := os.ReadFile(filepath.Join(h.root, "runs", runID, "pid")); err == nil {
					pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
					cpus, _ := placement.ProcessAffinity(pid)
					w.executorCPUs = cpus.String()
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *watch) finish() {
	close(w.stop)
	<-w.done
}

// mountOf is the cgroup v2 mount a subtree path lies under.
func mountOf(path string) string {
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if strings.HasPrefix(path, m+"/") {
			return m
		}
	}
	return ""
}

// A challenger can neither make itself look faster nor lock or read the host: hostile
// challengers, each a small real program beside a working service (e2e/hostile), run through
// the real sshd on a host installed by install.sh. After each, nothing of the challenger runs,
// the lock is free for the next run, the champion served throughout and its slices are sound.
func TestHostileChallengersCannotTouchTheChampionTheLockOrTheHost(t *testing.T) {
	extra := []string{"--arm-max-procs", "200"}
	online, _ := placement.Online()
	if len(online) >= 2 {
		extra = append(extra, "--loadgen-cpus", strconv.Itoa(online[0]), "--arm-cpus", online[1:].String())
	}
	h, _ := installHost(t, extra...)
	h.must(buildTarball(t, "fast", "v1", "exec ./service"), "deploy champion aaaaaaa")
	h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote aaaaaaa")
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	iso := st.Isolation
	if iso == nil || iso.Arms["champion"].User != h.championUser || !iso.Arms["challenger"].DedicatedUser || iso.MaxProcs.Limit != 200 {
		t.Fatalf("status isolation: %+v", iso)
	}
	t.Logf("status: cgroup %s (%s); placement %+v; max procs %+v; notes %q", iso.Cgroup.Mode, iso.Cgroup.Note, iso.Placement, iso.MaxProcs, iso.Notes)

	root, prefix := h.root, h.prefix
	secrets := []string{root + "/state.json", root + "/releases", root + "/releases/aaaaaaa/VERSION",
		root + "/arms/champion/work/VERSION", root + "/arms/champion", root + "/runs", root + "/audit.log", root + "/lock",
		root + "/champion.json", prefix + "/perf-host"}
	cases := []struct {
		name, script string
		kinds        []string // outcomes the run may end with
		// cpuHungry: the attack spends CPU (forking, spinning) on the CPUs the arms share, so a
		// champion slice may be disturbed; it must then be invalid, saying so.
		cpuHungry bool
		before    func(t *testing.T)
		check     func(t *testing.T, r contract.HostResult, log string, w *watch)
	}{
		{name: "setsid leftovers", script: "./hostile linger; exec ./service", check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
			if !w.cmdlines["./hostile lingering"] {
				t.Errorf("the lingering process never ran (saw %v)", w.cmdlines)
			}
			if !strings.Contains(log, "linger: escape to") || strings.Contains(log, "escape to "+root) {
				t.Logf("log: %s", log)
			}
		}},
		{name: "signals the champion", script: "./hostile signal & exec ./service", check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
			var d []float64
			for i := 0; i+1 < len(r.Slices); i += 2 {
				d = append(d, float64(r.Slices[i+1].LatencyUs.P90-r.Slices[i].LatencyUs.P90)/1000)
			}
			sort.Float64s(d)
			median := d[len(d)/2]
			t.Logf("same build on both ports: median challenger − champion p90 %.3f ms over %d pairs (the attack made it −31.1 ms)", median, len(d))
			// The attack's aim is to read faster. (Its /proc scans slow its own service on the
			// CPU the arms share: once +62 ms at p90, which is its own loss.)
			if median < -5 {
				t.Errorf("the challenger's signals made it read %.3f ms faster at p90 with the same build", -median)
			}
			if !strings.Contains(log, "refused") {
				t.Errorf("the hostile program reported no refused signals:\n%s", log)
			}
		}},
		{name: "reads the champion and the host", script: "./hostile snoop " + strings.Join(secrets, " ") + "; exec ./service", check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
			for _, leak := range []string{"snoop: READ", "snoop: LISTED", `"champion"`} {
				if strings.Contains(log, leak) {
					t.Errorf("the challenger reached what it should not (%q):\n%s", leak, log)
				}
			}
			if !strings.Contains(log, "snoop: ptrace") || strings.Contains(log, "ptrace") && !strings.Contains(log, "operation not permitted") {
				t.Errorf("ptrace of the champion was not refused:\n%s", log)
			}
			for _, p := range secrets {
				if out, err := as(h.challengerUser, fmt.Sprintf("if [ -d %[1]s ]; then ls %[1]s; else cat %[1]s; fi", p)); err == nil {
					t.Errorf("%s can read %s: %s", h.challengerUser, p, out)
				}
				if _, err := os.Stat(p + ".planted"); err == nil {
					t.Errorf("the challenger planted %s.planted", p)
				}
			}
			if out, err := as(h.championUser, "cat "+root+"/arms/challenger/work/VERSION"); err == nil {
				t.Errorf("the champion's user can read the challenger's files: %s", out)
			}
		}},
		{name: "fork bomb", script: "(sleep 0.3; exec ./hostile bomb) & exec ./service", kinds: []string{"challenger_crashed"}, cpuHungry: true, check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
			t.Logf("the challenger's user ran at most %d tasks (bound 200)", w.maxTasks)
			if w.maxTasks > 200 || w.maxTasks < 100 {
				t.Errorf("the fork bomb reached %d tasks; want it to press against the bound of 200", w.maxTasks)
			}
		}},
		{name: "burns the champion's CPUs", script: "GOMAXPROCS=16 ./hostile burn & exec ./service", cpuHungry: true, check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
			// What the burn gets depends on what else runs on the arms' CPUs (on a shared
			// machine, other sessions): it must be seen, and every champion slice it pushed
			// past the limit must be invalid.
			var idle []float64
			invalid := 0
			for _, s := range r.Slices {
				if s.Arm != "champion" {
					continue
				}
				idle = append(idle, deref(s.IdleArmCPUCores))
				over := deref(s.IdleArmCPUCores) > 0.25
				named := strings.Contains(s.InvalidReason, "disturbed: the challenger arm, not measured, used")
				if over != named {
					t.Errorf("champion slice %d: the idle challenger used %.2f cores, invalid reason %q", s.Index, deref(s.IdleArmCPUCores), s.InvalidReason)
				}
				if named {
					invalid++
				}
			}
			t.Logf("the idle challenger burned %v cores during the champion's slices; %d of them invalid", idle, invalid)
			if median(idle) < 0.1 {
				t.Errorf("the burning challenger was not seen: %v cores", idle)
			}
		}},
		{name: "supervisor killed before the run", script: "./hostile linger; exec ./service", before: func(t *testing.T) {
			var rec struct{ Pid int }
			b, _ := os.ReadFile(filepath.Join(root, "champion.json"))
			if json.Unmarshal(b, &rec) != nil || syscall.Kill(rec.Pid, syscall.SIGKILL) != nil {
				t.Fatalf("no supervisor to kill: %s", b)
			}
		}},
		// The arms of a run start together (docs/design/0013-symmetric-starts.md), so the champion
		// port is free while the challenger starts: a challenger that takes it first and serves it
		// slowly must never be measured as the champion. This champion binds late and stays up
		// without its port (as a service that retries would): the worst case.
		{name: "takes the champion port", script: "./hostile squat CHAMPION_PORT & exec ./service", kinds: []string{"champion_unhealthy"},
			before: func(t *testing.T) {
				h.must(buildTarball(t, "fast", "v1", "sleep 1; ./service; exec sleep 300"), "deploy champion abcdef0")
				h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote abcdef0")
			},
			check: func(t *testing.T, r contract.HostResult, log string, w *watch) {
				if !strings.Contains(log, "squat: serving") {
					t.Fatalf("the squatter never took the champion port; the case proves nothing:\n%s", log)
				}
				if r.Outcome.ErrorKind != "champion_unhealthy" || !strings.Contains(r.Outcome.Message, "is served by "+h.challengerUser) {
					t.Errorf("a run measured through a squatter: %+v", r.Outcome)
				}
			}},
		{name: "a plain challenger after all that", script: "exec ./service"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sha := fmt.Sprintf("%07x", 0xc0ffee0+i)
			id := fmt.Sprintf("hostile-%d", i)
			h.must(buildTarball(t, "fast", "v1", strings.ReplaceAll(c.script, "CHAMPION_PORT", strconv.Itoa(h.championPort))), "deploy challenger "+sha)
			if c.before != nil {
				c.before(t)
			}
			p := startPoller(h.championPort)
			plan := strings.Replace(runPlan(sha, 3, 0.5), `"health_timeout_seconds":5`, `"health_timeout_seconds":10`, 1)
			h.must([]byte(plan), "run "+id)
			w := h.startWatch(id)
			progress, _, _ := h.call(nil, "wait "+id)
			w.finish()
			p.finish()
			var r contract.HostResult
			if err := json.Unmarshal([]byte(h.must(nil, "result "+id)), &r); err != nil {
				t.Fatal(err)
			}
			log, _ := os.ReadFile(filepath.Join(root, "runs", id, "challenger.log"))
			if r.Outcome.Status != "ok" && !(r.Outcome.Status == "error" && contains(c.kinds, string(r.Outcome.ErrorKind))) {
				t.Errorf("outcome %+v\n%s", r.Outcome, progress)
			}
			t.Logf("outcome %s %s; champion stopped in %d samples; challenger tasks at most %d; CPUs: executor %s, champion %s, challenger %s",
				r.Outcome.Status, r.Outcome.ErrorKind, w.championStopped, w.maxTasks, w.executorCPUs, w.championCPUs, w.challengerCPUs)
			// Nothing of the challenger runs, in its cgroup or anywhere as its user.
			if left := running(t, h.challengerUser); len(left) > 0 {
				t.Errorf("after the run the challenger still runs %s", arm.Describe(left))
			}
			if h.cgroup != "" {
				if b, _ := os.ReadFile(filepath.Join(h.cgroup, "challenger", "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
					t.Errorf("the challenger's cgroup still holds %s", b)
				}
			}
			if len(w.outsideCgroup) > 0 {
				t.Errorf("challenger processes ran outside its cgroup: %v", w.outsideCgroup[:min(3, len(w.outsideCgroup))])
			}
			// The lock is free, and held by no one.
			if holders := lockHolders(t, root); len(holders) > 0 {
				t.Errorf("the lock file is open in %v", holders)
			}
			var st contract.Status
			json.Unmarshal([]byte(h.must(nil, "status")), &st)
			if st.Lock != nil {
				t.Errorf("the host is still locked by %+v", st.Lock)
			}
			// The champion served throughout, never stopped, its slices sound.
			if w.championStopped > 0 {
				t.Errorf("the champion was seen stopped (SIGSTOP) in %d samples", w.championStopped)
			}
			// The champion port is the run's from the hand-over to the give-back (both arms
			// start fresh), and answers throughout the measurement.
			if n := len(r.Slices); n > 0 {
				if down := p.downDuring(r.Slices[0].Start, r.Slices[n-1].End); len(down) > 0 {
					t.Errorf("the champion port failed during the measurement: %v", down)
				}
			}
			if v := version(h.championPort); !strings.HasPrefix(v, "fast") {
				t.Errorf("after the run the champion port answers %q", v)
			}
			for _, s := range r.Slices {
				// A challenger that crashed itself (the bomb takes its own service's threads) ends
				// the run in the middle of a slice, which is then cut short.
				caught := c.cpuHungry && strings.HasPrefix(s.InvalidReason, "disturbed: the challenger arm, not measured") ||
					r.Outcome.ErrorKind == "challenger_crashed" && strings.HasPrefix(s.InvalidReason, "interrupted")
				if s.Arm == "champion" && (!(s.Valid || caught) || s.Errors.Total() > 0) {
					t.Errorf("champion slice %d: valid %v (%s), %d errors, the idle challenger used %.2f cores", s.Index, s.Valid, s.InvalidReason, s.Errors.Total(), deref(s.IdleArmCPUCores))
				}
			}
			if len(online) >= 2 && w.championCPUs != "" && (w.executorCPUs != strconv.Itoa(online[0]) || w.championCPUs != online[1:].String() || w.challengerCPUs != online[1:].String()) {
				t.Errorf("placement: executor on %s, champion on %s, challenger on %s", w.executorCPUs, w.championCPUs, w.challengerCPUs)
			}
			if c.check != nil {
				c.check(t, r, string(log), w)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func deref(f *float64) float64 {
	if f == nil {
		return -1
	}
	return *f
}
