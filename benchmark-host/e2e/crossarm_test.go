package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
)

// crossRun is one run of a challenger beside the fast champion on an installed host: its
// result, its progress log and the challenger's own log.
type crossRun struct {
	r             contract.HostResult
	progress, log string
}

// crossArmRun deploys script as the challenger and runs pairs slices of 0.5 s against the
// champion, through the real sshd.
func (h *installedHost) crossArmRun(t *testing.T, id, script string, pairs int) crossRun {
	t.Helper()
	script = strings.ReplaceAll(script, "CHAMPION_PORT", strconv.Itoa(h.championPort))
	return h.crossArmRunBuild(t, id, buildTarball(t, "fast", "v1", script), serviceSpec, pairs)
}

// crossArmRunBuild is crossArmRun of a build (a tarball or a container image) and its spec.
func (h *installedHost) crossArmRunBuild(t *testing.T, id string, build []byte, spec string, pairs int) crossRun {
	t.Helper()
	sha := fmt.Sprintf("%07x", 0xc0de000+len(id)*131+int(id[len(id)-1]))
	h.must(build, "deploy challenger "+sha)
	spec = strings.Replace(spec, `"health_timeout_seconds":5`, `"health_timeout_seconds":10`, 1)
	plan := strings.Replace(runPlan(sha, pairs, 0.5), serviceSpec, spec, 1)
	h.must([]byte(plan), "run "+id)
	progress, _, _ := h.call(nil, "wait "+id)
	var c crossRun
	c.progress = progress
	raw := h.must(nil, "result "+id)
	if err := json.Unmarshal([]byte(raw), &c.r); err != nil {
		t.Fatal(err)
	}
	// For `perf-gate analyze` (the verdict on each attack): PERF_GATE_KEEP_RESULTS=DIR.
	if dir := os.Getenv("PERF_GATE_KEEP_RESULTS"); dir != "" {
		os.WriteFile(filepath.Join(dir, t.Name()[:strings.IndexByte(t.Name()+"/", '/')]+"-"+id+".json"), []byte(raw), 0o644)
	}
	b, _ := os.ReadFile(filepath.Join(h.root, "runs", id, "challenger.log"))
	c.log = string(b)
	t.Logf("%s: outcome %s %s %q; %d slices; median challenger − champion p90 %+.3f ms over the valid pairs; the challenger's last words: %q",
		id, c.r.Outcome.Status, c.r.Outcome.ErrorKind, firstLine(c.r.Outcome.Message), len(c.r.Slices), medianDiffP90(c.r), lastLine(c.log))
	return c
}

// medianDiffP90 is the median paired difference at p90 in ms over the pairs whose slices are
// both valid: what a hostile challenger is after.
func medianDiffP90(r contract.HostResult) float64 {
	byPair := map[int]map[string]int64{}
	for _, s := range r.Slices {
		if s.Valid {
			if byPair[s.Pair] == nil {
				byPair[s.Pair] = map[string]int64{}
			}
			byPair[s.Pair][s.Arm] = s.LatencyUs.P90
		}
	}
	var d []float64
	for _, p := range byPair {
		if len(p) == 2 {
			d = append(d, float64(p[contract.Challenger]-p[contract.Champion])/1000)
		}
	}
	if len(d) == 0 {
		return math.NaN() // no valid pair: the attack was seen
	}
	return median(d)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// reached sums, over the champion's slices, the connections it held that the load generator
// did not open, and who opened them.
func reached(r contract.HostResult) (int64, []string) {
	var n int64
	var who []string
	for _, s := range r.Slices {
		if s.Arm == contract.Champion && s.ForeignConnections > 0 {
			n += s.ForeignConnections
			who = append(who, s.ForeignPeers...)
		}
	}
	return n, who
}

// afterwards checks what every run must leave: nothing of the challenger running, the host
// unlocked, the champion serving, and the next plain challenger measured soundly.
func (h *installedHost) afterwards(t *testing.T, id string) {
	t.Helper()
	if left := running(t, h.challengerUser); len(left) > 0 {
		t.Errorf("after the run the challenger still runs %d processes", len(left))
	}
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if st.Lock != nil {
		t.Errorf("the host is still locked by %+v", st.Lock)
	}
	if v := version(h.championPort); !strings.HasPrefix(v, "fast") {
		t.Errorf("after the run the champion port answers %q", v)
	}
	next := h.crossArmRun(t, id+"-next", "exec ./service", 3)
	if next.r.Outcome.Status != contract.StatusOK {
		t.Errorf("the next run failed: %+v\n%s", next.r.Outcome, next.progress)
	}
	if n, who := reached(next.r); n > 0 {
		t.Errorf("the next run's champion was reached by others: %v", who)
	}
}

func crossArmHost(t *testing.T, extra ...string) *installedHost {
	online, _ := placement.Online()
	if len(online) >= 2 {
		extra = append(extra, "--loadgen-cpus", strconv.Itoa(online[0]), "--arm-cpus", online[1:].String())
	}
	h, out := installHost(t, append([]string{"--arm-max-procs", "300"}, extra...)...)
	t.Logf("install.sh: %s", grepLines(out, "network", "disk", "memory", "private_mounts"))
	h.must(buildTarball(t, "fast", "v1", "exec ./service"), "deploy champion aaaaaaa")
	h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote aaaaaaa")
	return h
}

func grepLines(text string, words ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, `"`+w+`"`) {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return strings.Join(out, "\n")
}

// A challenger cannot reach the champion through the host's network, fill the host's disk, or
// take its memory: hostile challengers through the real install (install.sh, sshd, the CI key).
func TestChallengerCannotReachTheChampionThroughTheNetworkOrTheDisk(t *testing.T) {
	t.Parallel()
	const diskBytes = 128 << 20
	h := crossArmHost(t, "--arm-disk-bytes", strconv.Itoa(diskBytes))
	t.Run("requests to the champion's port while its own is quiet", func(t *testing.T) {
		c := h.crossArmRun(t, "knock", "./hostile knock CHAMPION_PORT & exec ./service", 8)
		if c.r.Outcome.Status != contract.StatusOK {
			t.Errorf("outcome %+v", c.r.Outcome)
		}
		if !strings.Contains(c.log, "knock: :") {
			t.Fatalf("the knocking client never ran; the case proves nothing:\n%s", c.log)
		}
		if strings.Contains(c.log, "answered") && !strings.Contains(c.log, "answered 0 requests") {
			t.Errorf("the champion answered the challenger:\n%s", c.log)
		}
		if !strings.Contains(c.progress, "packets to the host outside its own ports were refused") {
			t.Errorf("the run log does not say the challenger was refused:\n%s", c.progress)
		}
		if n, who := reached(c.r); n > 0 {
			t.Errorf("the champion held %d connections the generator did not open: %v", n, who)
		}
		h.afterwards(t, "knock")
	})
	t.Run("a flood of idle connections to the champion's port", func(t *testing.T) {
		c := h.crossArmRun(t, "flood", "./hostile flood CHAMPION_PORT 200 & exec ./service", 8)
		if c.r.Outcome.Status != contract.StatusOK {
			t.Errorf("outcome %+v", c.r.Outcome)
		}
		if !strings.Contains(c.log, "flood: :") || !strings.Contains(c.log, " 0 connections open") || strings.Contains(c.log, "200 connections open") {
			t.Errorf("the flood reached the champion's port (or never ran):\n%s", c.log)
		}
		if n, who := reached(c.r); n > 0 {
			t.Errorf("the champion held %d connections the generator did not open: %v", n, who)
		}
		h.afterwards(t, "flood")
	})
	t.Run("fills the disk from STATE_DIR", func(t *testing.T) {
		c := h.crossArmRun(t, "fill", `(sleep 2.5; exec ./hostile fill "$STATE_DIR") & exec ./service`, 10)
		t.Logf("challenger log: %s", c.log)
		if !strings.Contains(c.log, "fill: filling") {
			t.Fatalf("the fill never ran:\n%s", c.log)
		}
		if c.r.Outcome.ErrorKind != "challenger_out_of_disk" || !strings.Contains(c.r.Outcome.Message, "challenger: out of its 128 MiB of disk") {
			t.Errorf("outcome %+v\n%s", c.r.Outcome, c.progress)
		}
		if len(c.r.Slices) == 0 {
			t.Errorf("the run's measurements up to the fill were not kept")
		}
		// Everything the challenger wrote is gone.
		out, _ := exec.Command("du", "-s", "-B1", filepath.Join(h.root, "arms", "challenger")).Output()
		if f := strings.Fields(string(out)); len(f) == 0 || atoi(f[0]) > 1<<20 {
			t.Errorf("after the run the challenger's disk holds %s bytes", out)
		}
		h.afterwards(t, "fill")
	})
	t.Run("a challenger that burns 0.15 cores of CPU in the background", func(t *testing.T) {
		c := h.crossArmRun(t, "spin", "./hostile spin 0.15 & exec ./service", 8)
		if c.r.Outcome.Status != contract.StatusOK {
			t.Errorf("outcome %+v", c.r.Outcome)
		}
		per := map[string][]float64{}
		for _, s := range c.r.Slices {
			if s.ServiceCPUUsPerRequest != nil {
				per[s.Arm] = append(per[s.Arm], *s.ServiceCPUUsPerRequest)
			}
			if s.ForeignConnections > 0 {
				t.Errorf("slice %d of the %s: %d foreign connections %v", s.Index, s.Arm, s.ForeignConnections, s.ForeignPeers)
			}
		}
		champion, challenger := median(per[contract.Champion]), median(per[contract.Challenger])
		t.Logf("CPU per request: champion %.0f µs, challenger %.0f µs (%+.0f%%)", champion, challenger, 100*(challenger/champion-1))
		if challenger < champion*1.2 {
			t.Errorf("the challenger's background CPU does not show in its CPU per request: %.0f against %.0f µs", challenger, champion)
		}
	})
}

// On a host without the packet filter, a challenger can reach the champion, but then the
// champion's slices name who reached it: the verdict drops their pairs.
func TestAHostWithoutThePacketFilterNamesTheSlicesWhereTheChampionServedOthers(t *testing.T) {
	t.Parallel()
	h := crossArmHost(t, "--no-net-isolation")
	c := h.crossArmRun(t, "knock-open", "./hostile knock CHAMPION_PORT & ./hostile flood CHAMPION_PORT 50 & exec ./service", 8)
	if c.r.Isolation == nil || !strings.HasPrefix(c.r.Isolation.Network, "none") {
		t.Errorf("isolation network: %+v", c.r.Isolation)
	}
	n, who := reached(c.r)
	t.Logf("the champion's slices held %d connections the generator did not open: %v", n, who)
	if n == 0 || !strings.Contains(strings.Join(who, " "), h.challengerUser) {
		t.Errorf("the challenger's connections to the champion were not seen:\n%s", c.log)
	}
	champion := 0
	for _, s := range c.r.Slices {
		if s.Arm == contract.Champion {
			champion++
			if s.ForeignConnections == 0 || !strings.Contains(s.HostDisturbance, "reached: the champion served") {
				t.Errorf("champion slice %d: %d foreign connections while the flood held 50, disturbance %q", s.Index, s.ForeignConnections, s.HostDisturbance)
			}
		}
	}
	h.afterwards(t, "knock-open")
}

// Many small processes, each smaller than the champion, exhaust the host's memory: the
// challenger's own limit holds them (cgroup v2's memory.max, or on a hybrid host the v1 memory
// controller's limit), the kernel kills inside the challenger's group, the run fails named, and
// the champion, perf-host, the load generator and sshd live on. On a hybrid host the whole
// installed host (its sshd and everything that starts, the arms included) is also held to
// 476 MiB, as a small machine is: the install's v1 memory subtree is that machine.
func TestChallengerThatExhaustsMemoryFailsAloneAndTheChampionServes(t *testing.T) {
	h := crossArmHost(t, "--arm-memory-bytes", strconv.Itoa(300<<20), "--arm-max-procs", "1500")
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	t.Logf("memory: %s", st.Isolation.Memory)
	if strings.HasPrefix(st.Isolation.Memory, "not limited") {
		t.Fatalf("the arms' memory is not limited on this host: %s", st.Isolation.Memory)
	}
	if machine := filepath.Join("/sys/fs/cgroup/memory", h.cgroupName); strings.Contains(st.Isolation.Memory, machine) {
		writeFile(t, filepath.Join(machine, "memory.limit_in_bytes"), strconv.Itoa(476<<20))
		pid, _ := os.ReadFile(filepath.Join(h.dir, "sshd.pid"))
		writeFile(t, filepath.Join(machine, "cgroup.procs"), strings.TrimSpace(string(pid)))
		// The supervisor started before sshd was held: start it again from inside.
		h.must([]byte(`{"command":["./start.sh"],"health_timeout_seconds":10}`), "promote aaaaaaa")
	}
	before := readVMStat("oom_kill")
	c := h.crossArmRun(t, "swarm", "(sleep 2.5; exec ./hostile swarm 150 7) & exec ./service", 10)
	t.Logf("the kernel killed %d processes for memory; challenger log: %s", readVMStat("oom_kill")-before, c.log)
	if c.r.Outcome.ErrorKind != "challenger_out_of_memory" || !strings.Contains(c.r.Outcome.Message, "challenger: killed for memory: over its memory limit") {
		t.Errorf("outcome %+v\n%s", c.r.Outcome, c.progress)
	}
	if f := finding(c.r.Preflight, "arm_memory"); f.Detail != st.Isolation.Memory || strings.HasPrefix(f.Detail, "not limited") {
		t.Errorf("pre-flight arm_memory does not name what holds the limit: %+v", f)
	}
	// The challenger's own limit held it: every kill the kernel logged for this host's groups was
	// inside the challenger's, never one the host (the machine's 476 MiB) ran out of, where the
	// OOM killer chooses among the host's processes.
	if log, err := exec.Command("dmesg").Output(); err != nil {
		t.Logf("dmesg: %v: which group each OOM kill was in is not checked", err)
	} else {
		kills := 0
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "oom-kill:") && strings.Contains(line, "oom_memcg=/"+h.cgroupName) {
				kills++
				if !strings.Contains(line, "oom_memcg=/"+h.cgroupName+"/challenger,") {
					t.Errorf("an OOM kill outside the challenger's own limit: %s", line)
				}
			}
		}
		t.Logf("the kernel logged %d OOM kills in this host's groups", kills)
	}
	h.afterwards(t, "swarm")
}

func readVMStat(key string) int64 {
	b, _ := os.ReadFile("/proc/vmstat")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return atoi(v)
		}
	}
	return 0
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}
