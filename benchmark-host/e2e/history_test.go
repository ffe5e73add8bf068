package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// The history over SSH, as the action keeps it (docs/design/0023-history.md): a gate's record is
// kept only when its run backs it; a promotion records the merged pull request's last gate as
// its step; the host keeps a month-old champion as an ancestor, runs a drift run against it, and
// never prunes its release.
func TestTheHistoryKeepsGatesPromotionsAndAncestorsOverSSH(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	h.must(strings.NewReader(runPlan("bbbbbbb", 2, 0.5)), "run pr-7-bbbbbbb-1")
	h.must(nil, "wait pr-7-bbbbbbb-1")
	h.must(strings.NewReader(strings.Replace(runPlan("", 2, 0.5), `"challenger_sha":"",`, "", 1)), "aa cal-1")
	h.must(nil, "wait cal-1")

	rec := gateJSON(t, func(g *contract.GateRecord) {})
	for _, c := range []struct{ body, run, want string }{
		{rec, "cal-1", `a gate is recorded from an A/B run that ended ok; this one is kind "aa"`},
		{rec, "no-such-run", "gate: run no-such-run: no run of that id on this host"},
		{gateJSON(t, func(g *contract.GateRecord) { g.ChallengerSHA = "ccccccc" }), "pr-7-bbbbbbb-1", "measured bbbbbbb against champion aaaaaaa, not ccccccc"},
		{gateJSON(t, func(g *contract.GateRecord) { g.Verdict = contract.VerdictGreen }), "pr-7-bbbbbbb-1", `gate: verdict: "green", but the comparisons give "red"`},
		{strings.Replace(rec, `"runs"`, `"shell":"$(id)","runs"`, 1), "pr-7-bbbbbbb-1", `gate: unknown field "shell"`},
		{strings.Repeat("x", 600<<10), "pr-7-bbbbbbb-1", "the record is longer than"},
	} {
		if _, errs, code := h.ssh(strings.NewReader(c.body), "gate-record "+c.run); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("gate-record %s: exit %d %q; want 2 and %q", c.run, code, errs, c.want)
		}
	}
	// The champion's own promotion is the history's first entry; nothing refused was kept.
	if history := historyOf(t, h); len(history.Entries) != 1 || history.Entries[0].Kind != contract.HistoryPromotion || history.Entries[0].Change.SHA != "aaaaaaa" {
		t.Fatalf("history after the refusals: %+v", history.Entries)
	}
	h.must(strings.NewReader(rec), "gate-record pr-7-bbbbbbb-1")
	if _, errs, code := h.ssh(strings.NewReader(rec), "gate-record pr-7-bbbbbbb-1"); code != 2 || !strings.Contains(errs, "already recorded") {
		t.Errorf("the same gate twice: exit %d %q", code, errs)
	}

	// Pull request 7 merged as bbbbbbb: its gate is the step main took.
	if out := h.must(nil, "promote bbbbbbb 7"); !strings.Contains(out, "its step is the gate of bbbbbbb") {
		t.Errorf("promote: %q", out)
	}
	// 35 days later (the host's clock moved by a local perf-host: the CI key cannot set it),
	// ccccccc is promoted; bbbbbbb reigned over several Mondays and stays as an ancestor.
	h.must(bytes.NewReader(buildTarball(t, "fast", "v3", "exec ./service")), "deploy champion ccccccc")
	h.local(t, "840h", "promote", "ccccccc")
	history := historyOf(t, h)
	kinds := []string{}
	for _, e := range history.Entries {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, " ") != "promotion gate promotion promotion" || history.Entries[2].Change.PullRequest != 7 || history.Entries[2].Change.Step == nil ||
		history.Entries[2].Change.Step.Gate.ChallengerSHA != "bbbbbbb" || history.Entries[3].Change.Step != nil || history.Champion != "ccccccc" {
		t.Fatalf("history: %+v", history)
	}
	if len(history.Ancestors) < 2 || history.Ancestors[0].SHA != "ccccccc" || history.Ancestors[1].SHA != "bbbbbbb" || history.Ancestors[1].Until == nil {
		t.Fatalf("ancestors: %+v", history.Ancestors)
	}

	// A drift run measures the champion against a kept ancestor, nothing else.
	drift := func(challenger, ancestor string) string {
		return strings.Replace(runPlan(challenger, 2, 0.5), `"challenger_sha":`, `"ancestor_sha":"`+ancestor+`","challenger_sha":`, 1)
	}
	for _, c := range []struct{ body, want string }{
		{drift("bbbbbbb", "bbbbbbb"), "a drift run measures the champion ccccccc against an ancestor; challenger_sha must name it, not bbbbbbb"},
		{drift("ccccccc", "aaaaaaa"), "aaaaaaa is not an earlier champion this host keeps"},
		{drift("ccccccc", "ccccccc"), "ccccccc is not an earlier champion this host keeps"},
		{strings.Replace(drift("ccccccc", "bbbbbbb"), `"challenger_sha":"ccccccc",`, `"merge_base_sha":"aaaaaaa","challenger_sha":"ccccccc",`, 1), "ancestor_sha: a drift run's champion arm runs the ancestor, so merge_base_sha cannot be asked for too"},
	} {
		if _, errs, code := h.ssh(strings.NewReader(c.body), "run drift-bad-1"); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("run %s: exit %d %q; want 2 and %q", c.body, code, errs, c.want)
		}
	}
	aa := strings.Replace(drift("", "bbbbbbb"), `"challenger_sha":"",`, "", 1)
	if _, errs, code := h.ssh(strings.NewReader(aa), "aa drift-bad-2"); code != 2 || !strings.Contains(errs, "ancestor_sha: an A/A run measures the champion against itself; leave it out") {
		t.Errorf("an A/A run with an ancestor: exit %d %q", code, errs)
	}
	h.must(strings.NewReader(drift("ccccccc", "bbbbbbb")), "run cal-2-drift-0")
	h.must(nil, "wait cal-2-drift-0")
	r := decodeResult(t, h.must(nil, "result cal-2-drift-0"))
	if b := r.Plan.Builds; b.Base != contract.BaseAncestor || b.ChampionSHA != "bbbbbbb" || b.ChallengerSHA != "ccccccc" {
		t.Fatalf("the drift run's builds: %+v", b)
	}
	record := `{"workload":"work","rate":200,"percentile":99,"champion_sha":"ccccccc","ancestor_sha":"bbbbbbb","estimate_ms":0.1,"ci_ms":[-0.2,0.4],"ancestor_ms":2.5,"pairs":2}`
	if _, errs, code := h.ssh(strings.NewReader(strings.Replace(record, `"ancestor_sha":"bbbbbbb"`, `"ancestor_sha":"aaaaaaa"`, 1)), "drift-record cal-2-drift-0"); code != 2 || !strings.Contains(errs, "not champion ccccccc against ancestor aaaaaaa") {
		t.Errorf("a drift record the run does not back: exit %d %q", code, errs)
	}
	if _, errs, code := h.ssh(strings.NewReader(record), "drift-record pr-7-bbbbbbb-1"); code != 2 || !strings.Contains(errs, `base "champion"`) {
		t.Errorf("a drift record sent with a gate's run: exit %d %q", code, errs)
	}
	h.must(strings.NewReader(record), "drift-record cal-2-drift-0")

	// The ancestor's release outlives gc's pruning of older releases (so do the champions a
	// rollback may restore; store.State.Protected's test covers an ancestor no rollback keeps).
	for _, sha := range []string{"1111111", "2222222", "3333333", "4444444", "5555555", "6666666"} {
		h.must(bytes.NewReader(buildTarball(t, "fast", sha, "exec ./service")), "deploy challenger "+sha)
	}
	h.must(nil, "gc")
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if releases := strings.Join(st.Releases, " "); !strings.Contains(releases, "bbbbbbb") || strings.Contains(releases, "1111111") {
		t.Errorf("after gc the releases are %v: the ancestor bbbbbbb must stay, 1111111 go", st.Releases)
	}
	if last := historyOf(t, h).Entries; len(last) != 5 || last[4].Kind != contract.HistoryDrift || last[4].RunID != "cal-2-drift-0" {
		t.Errorf("history after the drift run: %+v", last)
	}
}

// gateJSON is a valid gate record of pull request 7's run, changed by edit.
func gateJSON(t *testing.T, edit func(*contract.GateRecord)) string {
	floor := 0.05
	g := contract.GateRecord{
		PullRequest: 7, ChallengerSHA: "bbbbbbb", ChampionSHA: "aaaaaaa", Base: contract.BaseChampion, Verdict: contract.VerdictRed, Percentile: 99,
		Runs:        []string{"pr-7-bbbbbbb-1"},
		Comparisons: []contract.ComparisonRecord{{Workload: "work", Rate: 200, Verdict: contract.VerdictRed, EstimateMs: 0.3, CIMs: [2]float64{0.1, 0.5}, ChampionMs: 2.5, FloorMs: &floor, ThresholdMs: 2, Pairs: 2}},
	}
	edit(&g)
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func historyOf(t *testing.T, h *host) contract.History {
	t.Helper()
	var history contract.History
	if err := json.Unmarshal([]byte(h.must(nil, "history")), &history); err != nil {
		t.Fatal(err)
	}
	return history
}

// local runs perf-host on the host's root from a terminal with its clock moved by offset: what a
// test may do and a CI key may not.
func (h *host) local(t *testing.T, offset string, args ...string) string {
	t.Helper()
	flags := []string{"--root", h.Root, "--service-user", "nobody", "--champion-port", strconv.Itoa(h.ChampionPort), "--challenger-port", strconv.Itoa(h.ChallengerPort), "--cgroup", h.Cgroup, "--lock-wait", "60s", "--min-free-disk", "1"}
	cmd := exec.Command(filepath.Join(binaries(t), "perf-host"), append(append([]string{args[0]}, flags...), args[1:]...)...)
	cmd.Env = append(os.Environ(), "PERF_GATE_CLOCK_OFFSET="+offset)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("perf-host %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
