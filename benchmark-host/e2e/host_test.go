package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/toobusy"
)

func decodeResult(t *testing.T, raw string) contract.HostResult {
	t.Helper()
	var r contract.HostResult
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, raw)
	}
	return r
}

func TestDeployRunWaitResultOverSSH(t *testing.T) {
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.must(bytes.NewReader(buildTarball(t, "slow", "v2", "exec ./service")), "deploy challenger bbbbbbb")
	if out := h.must(strings.NewReader(runPlan("bbbbbbb", 3, 1)), "run pr-7-bbbbbbb-1"); !strings.Contains(out, "started pr-7-bbbbbbb-1") {
		t.Fatalf("run said %q", out)
	}
	progress := h.must(nil, "wait pr-7-bbbbbbb-1")
	for _, want := range []string{"preflight disk: ok", "champion aaaaaaa healthy", "challenger bbbbbbb healthy", "slice 6/6 challenger", contract.OutcomeMarker + `{"run_id":"pr-7-bbbbbbb-1","kind":"ab","status":"ok"`} {
		if !strings.Contains(progress, want) {
			t.Errorf("wait output lacks %q:\n%s", want, progress)
		}
	}
	r := decodeResult(t, h.must(nil, "result pr-7-bbbbbbb-1"))
	checks := map[string]bool{}
	for _, f := range r.Preflight {
		checks[f.Check] = true
	}
	if r.SchemaVersion != 1 || r.Generator != "perf-gate-loadgen" || len(r.Slices) != 6 || r.Outcome.Status != "ok" || !checks["disk"] || !checks["memory"] || !checks["cpu"] || !checks["quiet"] {
		t.Fatalf("result: schema %d, generator %q, %d slices, outcome %+v, findings %+v", r.SchemaVersion, r.Generator, len(r.Slices), r.Outcome, r.Preflight)
	}
	if r.Identity == nil || r.Identity.Champion.SHA != "aaaaaaa" || r.Identity.Challenger.SHA != "bbbbbbb" || !strings.HasPrefix(r.Identity.Challenger.Build, "sha256:") || r.Identity.Digest == "" {
		t.Errorf("identity %+v", r.Identity)
	}
	for _, s := range r.Slices {
		if s.ForeignCPUCores == nil {
			t.Errorf("slice %d has no foreign load reading", s.Index)
		}
	}
	if b := r.Plan.Builds; b == nil || *b != (contract.Builds{Kind: "ab", ChampionSHA: "aaaaaaa", ChallengerSHA: "bbbbbbb", Base: "champion"}) {
		t.Errorf("builds %+v", b)
	}
	var championP50 []float64
	for i := 0; i < 6; i += 2 {
		championP50 = append(championP50, float64(r.Slices[i].LatencyUs.P50))
	}
	t.Run("the slow build measures slower in every pair", func(t *testing.T) {
		if busy := toobusy.Result(r.Result); busy != "" {
			toobusy.Skip(t, busy)
		}
		for i := 0; i < 6; i += 2 {
			champ, chall := r.Slices[i], r.Slices[i+1]
			t.Logf("pair %d: champion p50 %d µs, challenger p50 %d µs", i/2, champ.LatencyUs.P50, chall.LatencyUs.P50)
			if chall.LatencyUs.P50 <= champ.LatencyUs.P50 {
				t.Errorf("pair %d: the slow challenger's p50 %d µs is not above the champion's %d µs", i/2, chall.LatencyUs.P50, champ.LatencyUs.P50)
			}
		}
	})
	// Both services ran as the unprivileged user, and the challenger is gone after the run.
	if v := version(h.ChallengerPort); !strings.HasPrefix(v, "down") {
		t.Errorf("challenger still answers after the run: %s", v)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("champion answers %q", v)
	}

	// comparison_base merge-base (docs/design/0014-who-runs-code.md): the champion arm runs the
	// deployed merge base (here the slow build) with the run's spec, and the host's champion serves
	// again afterwards.
	h.must(bytes.NewReader(buildTarball(t, "slow", "v0", "exec ./service")), "deploy champion ccccccc")
	mb := strings.Replace(runPlan("bbbbbbb", 3, 1), `"challenger_sha"`, `"merge_base_sha":"ccccccc","challenger_sha"`, 1)
	h.must(strings.NewReader(mb), "run pr-7-bbbbbbb-2")
	if progress := h.must(nil, "wait pr-7-bbbbbbb-2"); !strings.Contains(progress, "champion ccccccc healthy") {
		t.Errorf("the merge-base run's champion arm did not start the merge base:\n%s", progress)
	}
	m := decodeResult(t, h.must(nil, "result pr-7-bbbbbbb-2"))
	if b := m.Plan.Builds; b == nil || *b != (contract.Builds{Kind: "ab", ChampionSHA: "ccccccc", ChallengerSHA: "bbbbbbb", Base: "merge-base"}) {
		t.Errorf("merge-base run builds %+v", b)
	}
	t.Run("the champion arm measures the slow merge base slower than the champion", func(t *testing.T) {
		for _, run := range []contract.HostResult{r, m} {
			if busy := toobusy.Result(run.Result); busy != "" {
				toobusy.Skip(t, busy)
			}
		}
		var baseP50 []float64
		for i := 0; i < len(m.Slices); i += 2 {
			baseP50 = append(baseP50, float64(m.Slices[i].LatencyUs.P50))
		}
		// The slow build's extra work shows in the champion arm: it ran the merge base.
		if median(baseP50) <= median(championP50) {
			t.Errorf("champion arm p50 %v µs with the slow merge base, %v µs with the fast champion: the merge base did not run there", baseP50, championP50)
		}
	})
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after the merge-base run the champion answers %q", v)
	}
}

func TestWaitSurvivesADroppedConnection(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	h.must(strings.NewReader(runPlan("bbbbbbb", 4, 0.8)), "run pr-8-bbbbbbb-1")

	first := h.SSHCommand("wait pr-8-bbbbbbb-1")
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.Contains(lines.Text(), "slice 2/8") {
	}
	first.Process.Kill() // the connection drops mid-run
	first.Wait()

	progress := h.must(nil, "wait pr-8-bbbbbbb-1")
	for i := 1; i <= 8; i++ {
		if !strings.Contains(progress, fmt.Sprintf("slice %d/8", i)) {
			t.Errorf("the second wait lacks slice %d:\n%s", i, progress)
		}
	}
	if !strings.Contains(progress, `"status":"ok"`) {
		t.Errorf("the run did not finish ok:\n%s", progress)
	}
	again := h.must(nil, "wait pr-8-bbbbbbb-1")
	if again != progress {
		t.Errorf("a third wait differs from the second")
	}
	r := decodeResult(t, h.must(nil, "result pr-8-bbbbbbb-1"))
	if len(r.Slices) != 8 || r.Partial {
		t.Errorf("result has %d slices (partial %v), want all 8", len(r.Slices), r.Partial)
	}
}

// snapshot lists every file under root but the audit log and the champion's events (which
// the supervisor appends when the champion answers, a moment after promote returns), with
// their sizes, link counts and content digests.
func snapshot(t *testing.T, root string) string {
	var out []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || filepath.Base(path) == "audit.log" || filepath.Base(path) == "champion-events.jsonl" {
			return nil
		}
		info, _ := d.Info()
		digest := ""
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			digest = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		out = append(out, fmt.Sprintf("%s %d links %d %s", strings.TrimPrefix(path, root), info.Size(), info.Sys().(*syscall.Stat_t).Nlink, digest))
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func TestHostileCommandsAreRefusedWithoutSideEffects(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{maxDeployBytes: 6 << 20})
	h.setupChampion()
	marker := filepath.Join(h.dir, "pwned")
	before := snapshot(t, h.Root)
	for _, cmd := range []string{
		"status; touch " + marker,
		"status && touch " + marker,
		"status | touch " + marker,
		"status $(touch " + marker + ")",
		"status `touch " + marker + "`",
		"status\ntouch " + marker,
		"deploy challenger ../../etc",
		"run ../../tmp/x",
		"result pr-1..2",
		"frobnicate",
		"bash -c id",
		"wait " + strings.Repeat("a", 500),
		"",
	} {
		_, stderr, code := h.ssh(nil, cmd)
		if code != 2 || !strings.Contains(stderr, "refused") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and a refusal", cmd, code, stderr)
		}
	}
	gz := func(entries ...[3]string) []byte { // name, type (f, l, d, h), body or link target
		var buf bytes.Buffer
		w := newTarWriter(&buf)
		for _, e := range entries {
			w.add(e[0], e[1], e[2])
		}
		w.close()
		return buf.Bytes()
	}
	random := make([]byte, 8<<20)
	rand.Read(random)
	for name, tb := range map[string][]byte{
		"dot-dot":     gz([3]string{"../evil", "f", "x"}),
		"absolute":    gz([3]string{"/etc/evil", "f", "x"}),
		"symlink out": gz([3]string{"link", "l", "../../../etc/passwd"}),
		"oversize":    gz([3]string{"blob", "f", string(random)}),
		// Each link looks inside when judged lexically; sub/a is the release itself, so b is
		// releases/ and c the host's root.
		"symlink chain": gz([3]string{"sub/", "d", ""}, [3]string{"sub/a", "l", ".."}, [3]string{"b", "l", "sub/a/.."}, [3]string{"c", "l", "b/.."}),
		"hard link through the chain": gz([3]string{"sub/", "d", ""}, [3]string{"sub/a", "l", ".."}, [3]string{"b", "l", "sub/a/.."},
			[3]string{"c", "l", "b/.."}, [3]string{"statecopy", "h", "c/state.json"}),
	} {
		_, stderr, code := h.ssh(bytes.NewReader(tb), "deploy challenger ccccccc")
		if code != 2 {
			t.Errorf("tarball %s: exit %d, stderr %q; want a refusal", name, code, stderr)
		}
		t.Logf("tarball %s: %s", name, strings.TrimSpace(stderr))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hostile command ran")
	}
	if after := snapshot(t, h.Root); after != before {
		t.Errorf("the host's state changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	audit, _ := os.ReadFile(filepath.Join(h.Root, "audit.log"))
	if n := strings.Count(string(audit), `"outcome":"refused`); n < 12 {
		t.Errorf("audit log has %d refusals, want every refused command:\n%s", n, audit)
	}
}

func TestChallengerFailuresNameTheCauseAndLeaveTheChampionServing(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	cases := []struct {
		sha, script, kind, logLine string
	}{
		{"ddddddd", `echo "boom: missing config /etc/app.yaml" >&2; sleep 600`, "challenger_unhealthy", "boom: missing config"},
		{"eeeeeee", `./service & pid=$!; sleep 1.5; kill -9 $pid; echo "fatal: out of memory" >&2; exit 1`, "challenger_crashed", "fatal: out of memory"},
	}
	for i, c := range cases {
		h.must(bytes.NewReader(buildTarball(t, "fast", "bad", c.script)), "deploy challenger "+c.sha)
		id := fmt.Sprintf("pr-9-%s-%d", c.sha, i)
		h.must(strings.NewReader(runPlan(c.sha, 4, 0.8)), "run "+id)
		progress, _, code := h.ssh(nil, "wait "+id)
		if code != 1 {
			t.Errorf("%s: wait exited %d, want 1", c.kind, code)
		}
		raw := h.must(nil, "result "+id)
		var r struct{ Outcome contract.Outcome }
		json.Unmarshal([]byte(raw), &r)
		if string(r.Outcome.ErrorKind) != c.kind || !strings.Contains(r.Outcome.Message, c.logLine) {
			t.Errorf("%s: outcome %+v; want the kind and the log tail line %q\n%s", c.kind, r.Outcome, c.logLine, progress)
		}
		t.Logf("%s: %s", c.kind, strings.ReplaceAll(r.Outcome.Message, "\n", " | "))
		if v := version(h.ChampionPort); v != "fast v1" {
			t.Errorf("%s: champion answers %q after the failure", c.kind, v)
		}
		var st contract.Status
		json.Unmarshal([]byte(h.must(nil, "status")), &st)
		if st.Lock != nil {
			t.Errorf("%s: the lock is still held by %+v", c.kind, st.Lock)
		}
	}
}

func TestConcurrentRunsNeverOverlap(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	var wg sync.WaitGroup
	for _, id := range []string{"pr-1-bbbbbbb-1", "pr-2-bbbbbbb-1"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, errs, code := h.ssh(strings.NewReader(runPlan("bbbbbbb", 2, 0.6)), "run "+id); code != 0 {
				t.Errorf("run %s: exit %d %s", id, code, errs)
			}
		}()
	}
	wg.Wait()
	var windows [][2]time.Time
	for _, id := range []string{"pr-1-bbbbbbb-1", "pr-2-bbbbbbb-1"} {
		h.must(nil, "wait "+id)
		r := decodeResult(t, h.must(nil, "result "+id))
		windows = append(windows, [2]time.Time{r.Outcome.Started, r.Outcome.Ended})
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i][0].Before(windows[j][0]) })
	if !windows[0][1].Before(windows[1][0]) {
		t.Errorf("runs overlap: %v and %v", windows[0], windows[1])
	}
	t.Logf("run windows: %s-%s and %s-%s", windows[0][0].Format("15:04:05.000"), windows[0][1].Format("15:04:05.000"),
		windows[1][0].Format("15:04:05.000"), windows[1][1].Format("15:04:05.000"))

	// With no patience, a second run is refused with who holds the host and since when.
	impatient := newHost(t, hostOptions{lockWait: time.Millisecond})
	impatient.setupChampion()
	impatient.deployChallenger()
	impatient.must(strings.NewReader(runPlan("bbbbbbb", 2, 0.6)), "run pr-3-bbbbbbb-1")
	_, stderr, code := impatient.ssh(strings.NewReader(runPlan("bbbbbbb", 2, 0.6)), "run pr-4-bbbbbbb-1")
	if code != 4 || !strings.Contains(stderr, "host busy: ab pr-3-bbbbbbb-1 since ") {
		t.Errorf("second run: exit %d, stderr %q; want 4 and 'host busy: ab pr-3-bbbbbbb-1 since …'", code, stderr)
	}
	impatient.must(nil, "wait pr-3-bbbbbbb-1")
}

// poller asks the champion port for /health every millisecond and records the longest run
// of failed polls.
type poller struct {
	port    int
	stop    chan struct{}
	done    chan struct{}
	longest atomic.Int64 // ns
	fails   atomic.Int64

	mu      sync.Mutex
	outages [][2]time.Time // from the first failed poll to the next answered one
}

func startPoller(port int) *poller {
	p := &poller{port: port, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var downSince time.Time
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			ok := strings.HasPrefix(version(p.port), "fast")
			now := time.Now()
			switch {
			case !ok && downSince.IsZero():
				downSince = now
				p.fails.Add(1)
			case !ok:
				p.fails.Add(1)
			case ok && !downSince.IsZero():
				if d := now.Sub(downSince); d > time.Duration(p.longest.Load()) {
					p.longest.Store(int64(d))
				}
				p.mu.Lock()
				p.outages = append(p.outages, [2]time.Time{downSince, now})
				p.mu.Unlock()
				downSince = time.Time{}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return p
}

func (p *poller) finish() time.Duration {
	close(p.stop)
	<-p.done
	return time.Duration(p.longest.Load())
}

// downDuring lists the outages that overlap [from, to].
func (p *poller) downDuring(from, to time.Time) [][2]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][2]time.Time
	for _, o := range p.outages {
		if o[0].Before(to) && o[1].After(from) {
			out = append(out, o)
		}
	}
	return out
}

// championSince is status's champion_since.
func championSince(t *testing.T, h *host) time.Time {
	t.Helper()
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	since, err := time.Parse(time.RFC3339Nano, st.ChampionSince)
	if err != nil {
		t.Errorf("status champion_since %q: %v", st.ChampionSince, err)
	}
	return since
}

func TestPromoteAndRollbackKeepServingAndTakeTheLock(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{lockWait: 2 * time.Second})
	h.setupChampion()
	h.must(bytes.NewReader(buildTarball(t, "fast", "v2", "exec ./service")), "deploy champion bbbbbbb")

	p := startPoller(h.ChampionPort)
	h.must(strings.NewReader(strings.Replace(serviceSpec, `"/health"`, `"/version"`, 1)), "promote bbbbbbb")
	window := p.finish()
	if v := version(h.ChampionPort); v != "fast v2" {
		t.Errorf("after promote the champion answers %q, want v2", v)
	}
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if st.Champion != "bbbbbbb" || st.Previous != "aaaaaaa" {
		t.Errorf("status champion %s previous %s", st.Champion, st.Previous)
	}
	// When each champion was made: a pool's champion is the newest of its hosts'.
	promoted := championSince(t, h)
	if time.Since(promoted) > time.Minute {
		t.Errorf("status champion_since %v: want the promotion's time", promoted)
	}
	t.Logf("promote: :%d did not answer for at most %v (%d failed polls)", h.ChampionPort, window, p.fails.Load())
	fmt.Printf("[e2e] promote: champion port unanswered for at most %v\n", window.Round(time.Millisecond))

	p = startPoller(h.ChampionPort)
	h.must(nil, "rollback")
	window = p.finish()
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after rollback the champion answers %q, want v1", v)
	}
	if rolledBack := championSince(t, h); !rolledBack.After(promoted) {
		t.Errorf("after rollback champion_since %v, want later than the promotion's %v", rolledBack, promoted)
	}
	// The rolled-back champion runs with its own service spec again, not its successor's, and
	// the build rolled back from is forgotten: nothing is left to roll back to.
	var state store.State
	if b, err := os.ReadFile(filepath.Join(h.Root, "state.json")); err != nil || json.Unmarshal(b, &state) != nil || state.Service.HealthPath != "/health" || len(state.History) != 0 {
		t.Errorf("after rollback the state is %+v (%v)", state, err)
	}
	if _, stderr, code := h.ssh(nil, "rollback"); code == 0 || !strings.Contains(stderr, "no previous champion") {
		t.Errorf("a second rollback: exit %d, stderr %q", code, stderr)
	}
	// Promotions stack: two promotions, then two rollbacks, walk back to the first champion.
	h.must(nil, "promote bbbbbbb")
	h.must(bytes.NewReader(buildTarball(t, "fast", "v3", "exec ./service")), "deploy champion ddddddd")
	h.must(nil, "promote ddddddd")
	if out := h.must(nil, "rollback"); !strings.Contains(out, "champion is bbbbbbb again (was ddddddd; previous aaaaaaa)") {
		t.Errorf("first rollback said %q", out)
	}
	h.must(nil, "rollback")
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after two rollbacks the champion answers %q, want v1", v)
	}
	fmt.Printf("[e2e] rollback: champion port unanswered for at most %v\n", window.Round(time.Millisecond))

	// The champion promoted again with a changed spec (its config changed service:) serves
	// with that spec; the same spec again changes nothing; the champion kept answering.
	beforeRespec := championSince(t, h)
	p = startPoller(h.ChampionPort)
	respec := strings.Replace(serviceSpec, `"/health"`, `"/version"`, 1)
	if out := h.must(strings.NewReader(respec), "promote aaaaaaa"); !strings.Contains(out, "aaaaaaa is already the champion; it serves with the new service spec now") {
		t.Errorf("promote of the champion with a new spec said %q", out)
	}
	if out := h.must(strings.NewReader(respec), "promote aaaaaaa"); strings.TrimSpace(out) != "aaaaaaa is already the champion" {
		t.Errorf("promote of the champion with its own spec said %q", out)
	}
	window = p.finish()
	if since := championSince(t, h); !since.Equal(beforeRespec) {
		t.Errorf("a new spec for the same champion moved champion_since from %v to %v", beforeRespec, since)
	}
	if b, err := os.ReadFile(filepath.Join(h.Root, "state.json")); err != nil || json.Unmarshal(b, &state) != nil || state.Service.HealthPath != "/version" || state.Champion != "aaaaaaa" || version(h.ChampionPort) != "fast v1" {
		t.Errorf("after the new spec the state is %+v (%v), serving %q", state, err, version(h.ChampionPort))
	}
	fmt.Printf("[e2e] new spec for the champion: champion port unanswered for at most %v\n", window.Round(time.Millisecond))

	// A build that never becomes healthy is refused before the champion is touched.
	h.must(bytes.NewReader(buildTarball(t, "fast", "broken", `echo "cannot bind" >&2; exit 3`)), "deploy champion fffffff")
	p = startPoller(h.ChampionPort)
	_, stderr, code := h.ssh(nil, "promote fffffff")
	window = p.finish()
	if code == 0 || !strings.Contains(stderr, "promotion refused") || !strings.Contains(stderr, "cannot bind") {
		t.Errorf("broken promote: exit %d, stderr %q", code, stderr)
	}
	if window > 0 || version(h.ChampionPort) != "fast v1" {
		t.Errorf("a refused promotion interrupted the champion (%v) or replaced it (%s)", window, version(h.ChampionPort))
	}

	// A build that passes the pre-check and then fails as champion: the previous one is restored.
	flaky := fmt.Sprintf(`if [ -e %[1]s ]; then echo "second start fails" >&2; exit 4; fi; touch %[1]s; exec ./service`, filepath.Join(h.dir, "flaky-started"))
	os.Chmod(h.dir, 0o777) // the service user writes the marker
	h.must(bytes.NewReader(buildTarball(t, "fast", "flaky", flaky)), "deploy champion 1234567")
	_, stderr, code = h.ssh(nil, "promote 1234567")
	if code == 0 || !strings.Contains(stderr, "previous champion aaaaaaa restored and serving") {
		t.Errorf("flaky promote: exit %d, stderr %q", code, stderr)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after the failed promotion the champion answers %q, want v1", v)
	}
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if st.Champion != "aaaaaaa" {
		t.Errorf("state names %s as champion after a failed promotion", st.Champion)
	}

	// A promotion never cuts into a run: it waits for the lock and gives up past its wait.
	h.must(bytes.NewReader(buildTarball(t, "fast", "v3", "exec ./service")), "deploy challenger ccccccc")
	h.must(strings.NewReader(runPlan("ccccccc", 3, 1)), "run pr-5-ccccccc-1")
	_, stderr, code = h.ssh(nil, "promote bbbbbbb")
	if code != 4 || !strings.Contains(stderr, "host busy: ab pr-5-ccccccc-1") {
		t.Errorf("promote during a run: exit %d, stderr %q", code, stderr)
	}
	if out := h.must(nil, "wait pr-5-ccccccc-1"); !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("the run was disturbed:\n%s", out)
	}
}

// tarWriter writes small hostile tarballs: "f" entries are files, "l" symlinks, "h" hard
// links, "d" directories.
type tarWriter struct {
	gz *gzip.Writer
	tw *tar.Writer
}

func newTarWriter(w io.Writer) *tarWriter {
	gz := gzip.NewWriter(w)
	return &tarWriter{gz: gz, tw: tar.NewWriter(gz)}
}

func (w *tarWriter) add(name, typ, body string) {
	switch typ {
	case "l":
		w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: body, Mode: 0o777})
		return
	case "h":
		w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: body, Mode: 0o644})
		return
	case "d":
		w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755})
		return
	}
	w.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644})
	w.tw.Write([]byte(body))
}

func (w *tarWriter) close() {
	w.tw.Close()
	w.gz.Close()
}

func TestAbortGcAndFloors(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	h.must(strings.NewReader(runPlan("bbbbbbb", 20, 1)), "run pr-6-bbbbbbb-1")
	time.Sleep(2500 * time.Millisecond)
	h.must(nil, "abort pr-6-bbbbbbb-1")
	_, _, code := h.ssh(nil, "wait pr-6-bbbbbbb-1")
	r := decodeResult(t, h.must(nil, "result pr-6-bbbbbbb-1"))
	if code != 1 || r.Outcome.Status != "aborted" || !r.Partial || len(r.Slices) == 0 || len(r.Slices) >= 40 {
		t.Errorf("abort: wait exit %d, outcome %+v, partial %v, %d slices", code, r.Outcome, r.Partial, len(r.Slices))
	}
	if _, errs, code := h.ssh(nil, "abort pr-6-bbbbbbb-1"); code == 0 || !strings.Contains(errs, "already finished") {
		t.Errorf("a second abort: exit %d %q", code, errs)
	}

	for _, sha := range []string{"1111111", "2222222", "3333333", "4444444", "5555555", "6666666", "7777777"} {
		h.must(bytes.NewReader(buildTarball(t, "fast", sha, "exec ./service")), "deploy challenger "+sha)
		time.Sleep(10 * time.Millisecond) // distinct modification times
	}
	var gc struct{ Removed []string }
	json.Unmarshal([]byte(h.must(nil, "gc")), &gc)
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	// The 5 newest and the champion stay; bbbbbbb and 1111111, 2222222 go.
	if len(st.Releases) != 6 || !strings.Contains(strings.Join(st.Releases, " "), "aaaaaaa") || len(gc.Removed) != 3 {
		t.Errorf("after gc: releases %v, removed %v", st.Releases, gc.Removed)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("gc disturbed the champion: %q", v)
	}

	// `runs` lists the finished runs of a challenger: the aborted one, nothing for another sha.
	var runs []contract.RunSummary
	json.Unmarshal([]byte(h.must(nil, "runs bbbbbbb")), &runs)
	if len(runs) != 1 || runs[0].RunID != "pr-6-bbbbbbb-1" || runs[0].Status != "aborted" || runs[0].ChampionSHA != "aaaaaaa" || runs[0].Workload != "work" || runs[0].Rate != 200 {
		t.Errorf("runs bbbbbbb: %+v", runs)
	}
	if out := h.must(nil, "runs 7777777"); strings.TrimSpace(out) != "[]" {
		t.Errorf("runs of a sha never run: %q", out)
	}

	// A floor must come from a finished A/A run of the same workload and rate.
	aa := strings.Replace(runPlan("", 2, 0.5), `"challenger_sha":"",`, "", 1)
	h.must(strings.NewReader(aa), "aa cal-1")
	h.must(nil, "wait cal-1")
	floor := `{"workload":"work","rate":200,"percentile":99,"half_width_ms":0.07,"ci_ms":[-0.05,0.07],"pairs":10}`
	for _, c := range []struct{ body, run, want string }{
		{`{"workload":"work","rate":200,"percentile":99,"half_width_ms":-1,"pairs":10}`, "cal-1", "half_width_ms"},
		{strings.Replace(floor, `"percentile":99,`, "", 1), "cal-1", "percentile: must be in (0, 100), got 0"},
		{strings.Replace(floor, `"percentile":99,`, `"percentile":100,`, 1), "cal-1", "percentile: must be in (0, 100), got 100"},
		{floor, "pr-6-bbbbbbb-1", `kind "ab", status "aborted"`},
		{floor, "no-such-run", "no finished run"},
		{strings.Replace(floor, "200", "300", 1), "cal-1", "measured work@200, not work@300"},
	} {
		if _, errs, code := h.ssh(strings.NewReader(c.body), "floor-record "+c.run); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("floor-record %s %s: exit %d %q; want 2 and %q", c.run, c.body, code, errs, c.want)
		}
	}
	// A floor recorded before floors named their percentile is read as p99, marked as assumed.
	legacy := `{"workload":"work","rate":200,"half_width_ms":0.3,"ci_ms":[-0.2,0.4],"pairs":10,"run_id":"cal-0","time":"2026-11-01T10:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(h.Root, "floors.jsonl"), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	h.must(strings.NewReader(floor), "floor-record cal-1")
	h.must(strings.NewReader(strings.Replace(floor, "0.07,", "0.09,", 1)), "floor-record cal-1")
	h.must(strings.NewReader(strings.Replace(strings.Replace(floor, "0.07,", "0.02,", 1), `"percentile":99`, `"percentile":90`, 1)), "floor-record cal-1")
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if f, ok := st.Floors["work@200/p99"]; !ok || f.HalfWidthMs != 0.09 || f.RunID != "cal-1" || f.PercentileAssumed {
		t.Errorf("status floors at p99 %+v", st.Floors)
	}
	if f, ok := st.Floors["work@200/p90"]; !ok || f.HalfWidthMs != 0.02 || len(st.Floors) != 2 {
		t.Errorf("status floors at p90 %+v", st.Floors)
	}
	var history []contract.Floor
	json.Unmarshal([]byte(h.must(nil, "floors")), &history)
	if len(history) != 4 || history[0].Percentile != 99 || !history[0].PercentileAssumed || history[1].HalfWidthMs != 0.07 || history[2].HalfWidthMs != 0.09 || history[3].Percentile != 90 {
		t.Errorf("floor history %+v", history)
	}
	// The floor's CPU state is what later runs are checked against.
	if b, err := os.ReadFile(filepath.Join(h.Root, "calibration.json")); err != nil || !strings.Contains(string(b), "cpu_model") {
		t.Errorf("calibration.json after a floor: %q %v", b, err)
	}
}

// A floor measured on a loaded host would excuse real regressions as noise
// (docs/design/0011-instrument-vouches-for-itself.md): the host refuses to record one from a run
// its preflight flagged.
func TestAFloorIsNeverRecordedFromAFlaggedRun(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{extraFlags: []string{"--max-foreign-cores", "0", "--settle-seconds", "1"}})
	h.setupChampion()
	aa := strings.Replace(runPlan("", 2, 0.3), `"challenger_sha":"",`, "", 1)
	h.must(strings.NewReader(aa), "aa cal-1")
	h.must(nil, "wait cal-1")
	r := decodeResult(t, h.must(nil, "result cal-1"))
	var quiet contract.Finding
	for _, f := range r.Preflight {
		if f.Check == "quiet" {
			quiet = f
		}
	}
	if quiet.Status != contract.FindingFlag {
		t.Fatalf("preflight with --max-foreign-cores 0: %+v", r.Preflight)
	}
	floor := `{"workload":"work","rate":200,"percentile":99,"half_width_ms":0.07,"ci_ms":[-0.05,0.07],"pairs":2}`
	_, errs, code := h.ssh(strings.NewReader(floor), "floor-record cal-1")
	if code != 2 || !strings.Contains(errs, "ran with preflight flags (quiet: ") || !strings.Contains(errs, "a floor is never recorded from a flagged run") {
		t.Errorf("floor-record of a flagged run: exit %d %q", code, errs)
	}
	if out := h.must(nil, "floors"); strings.TrimSpace(out) != "[]" {
		t.Errorf("floors after the refusal: %s", out)
	}
}

func TestBadPlansAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	good := runPlan("bbbbbbb", 2, 0.5)
	for i, c := range []struct{ plan, field string }{
		{strings.Replace(good, `"service":`, `"servce":`, 1), `unknown field "servce"`},
		{strings.Replace(good, `"challenger_sha":"bbbbbbb",`, ``, 1), "challenger_sha: required"},
		{strings.Replace(good, `"bbbbbbb"`, `"ccccccc"`, 1), `release "ccccccc" is not deployed`},
		{strings.Replace(good, `"challenger_sha"`, `"merge_base_sha":"ccccccc","challenger_sha"`, 1), `merge_base_sha: release "ccccccc" is not deployed (deploy champion SHA first)`},
		{strings.Replace(good, `"challenger_sha"`, `"merge_base_sha":"aaaaaaa","champion_sha":"aaaaaaa","challenger_sha"`, 1), "merge_base_sha: the champion arm runs the merge base, so champion_sha cannot be asked for too"},
		{strings.Replace(good, `"challenger_sha"`, `"merge_base_sha":"NOTHEX","challenger_sha"`, 1), "merge_base_sha"},
		{strings.Replace(good, `["./start.sh"]`, `[]`, 1), "service.command: required for a build that is not a container image (aaaaaaa)"},
		{strings.Replace(good, `"rate":200`, `"rate":-1`, 1), "loadgen.rate"},
		{strings.Replace(good, `"pairs":2`, `"pairs":5000`, 1), "loadgen.pairs: 5000 pairs of 0.5 s slices (5000 s) + 0.3 s warm-up + 5 s to start the arms (dependencies, setup and health check) would hold the host for 5005.3 s, over this host's --max-run-seconds 3600"},
		{strings.Replace(good, `"workload":"work",`, `"targets":{"champion":"http://evil:1","challenger":"http://evil:2"},`, 1), "loadgen.targets: set by the host"},
		{strings.Replace(good, `"path":"/work?key={{rand 100}}"`, `"path":"/{{nope}}"`, 1), "loadgen.requests[0].path"},
		// A body_file would make the host read its own files and send them to the challenger.
		{strings.Replace(good, `"path":"/work?key={{rand 100}}"`, `"path":"/x","body_file":"../../state.json"`, 1), "loadgen.requests[0].body_file: not accepted"},
		// A descriptor set is read from each arm's release, never from elsewhere on the host.
		{strings.Replace(good, `"workload":"work",`, `"workload":"work","protocol":"grpc","proto_descriptor_set":"../../state.json",`, 1), "loadgen.proto_descriptor_set: must be a relative path inside the build"},
		{strings.Replace(good, `"workload":"work",`, `"workload":"work","protocol":"grpc","proto_descriptor_set":"/etc/passwd",`, 1), "loadgen.proto_descriptor_set: must be a relative path inside the build"},
		{strings.Replace(good, `"workload":"work",`, `"builds":{"kind":"ab","champion_sha":"bbbbbbb","challenger_sha":"aaaaaaa"},`, 1), "loadgen.builds: set by the host"},
		{strings.Replace(good, `"rate":200`, `"rate":"fast"`, 1), "loadgen.rate: expected float64, got a JSON string"},
		{"not json", "plan:"},
	} {
		_, stderr, code := h.ssh(strings.NewReader(c.plan), fmt.Sprintf("run bad-plan-%d", i))
		if code != 2 || !strings.Contains(stderr, c.field) {
			t.Errorf("plan %d: exit %d, stderr %q; want 2 and %q", i, code, stderr, c.field)
		}
	}
	aa := strings.Replace(good, `"challenger_sha":"bbbbbbb",`, `"merge_base_sha":"aaaaaaa",`, 1)
	if _, stderr, code := h.ssh(strings.NewReader(aa), "aa bad-aa"); code != 2 || !strings.Contains(stderr, "merge_base_sha: an A/A run measures the champion against itself") {
		t.Errorf("an A/A run with a merge base: exit %d, stderr %q", code, stderr)
	}
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if st.Lock != nil {
		t.Errorf("a refused plan left the lock held: %+v", st.Lock)
	}
	if entries, _ := os.ReadDir(filepath.Join(h.Root, "runs")); len(entries) != 0 {
		t.Errorf("refused plans left %d run directories", len(entries))
	}
}
