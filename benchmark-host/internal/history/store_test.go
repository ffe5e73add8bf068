package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

func ptr[T any](v T) *T { return &v }

// gate is a valid gate record: one red, advisory comparison.
func gate(pr int, sha string) *contract.GateRecord {
	return &contract.GateRecord{
		PullRequest: pr, ChallengerSHA: sha, ChampionSHA: "c0ffee1", Base: contract.BaseChampion,
		Verdict: contract.VerdictRed, Percentile: 99, Runs: []string{"pr" + fmt.Sprint(pr) + "-" + sha + "-1-0"},
		Comparisons: []contract.ComparisonRecord{{
			Workload: "work", Rate: 1000, Verdict: contract.VerdictRed, EstimateMs: 0.4, CIMs: [2]float64{0.1, 0.7},
			ChampionMs: 40, FloorMs: ptr(0.2), ThresholdMs: 2, Pairs: 90, CPUPercent: ptr(3.5),
			Identity: strings.Repeat("a", 64),
		}},
	}
}

// fixedClock starts at t and moves by step at every reading.
func fixedClock(t time.Time, step time.Duration) Clock {
	return func() time.Time { t = t.Add(step); return t }
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func open(t *testing.T, bound int64) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), bound, fixedClock(t0, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAppendsAndReadsBackEachKind(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	entries := []contract.HistoryEntry{
		{Kind: contract.HistoryGate, RunID: "pr7-abc1234-1-0", Gate: gate(7, "abc1234")},
		{Kind: contract.HistoryPromotion, Change: &contract.ChampionChange{SHA: "abc1234", Previous: "c0ffee1", PullRequest: 7, Step: &contract.Step{Gated: t0, Gate: *gate(7, "abc1234")}}},
		{Kind: contract.HistoryRollback, Change: &contract.ChampionChange{SHA: "c0ffee1", Previous: "abc1234"}},
		{Kind: contract.HistoryCalibration, RunID: "calibrate-1-0", Calibration: &contract.FloorRecord{Workload: "work", Rate: 1000, Percentile: 99, HalfWidthMs: 0.2, CIMs: [2]float64{-0.1, 0.3}, Pairs: 90}},
		{Kind: contract.HistoryDrift, RunID: "drift-1-0", Drift: &contract.DriftRecord{Workload: "work", Rate: 1000, Percentile: 99, ChampionSHA: "abc1234", AncestorSHA: "c0ffee1", EstimateMs: 0.5, CIMs: [2]float64{0.2, 0.8}, AncestorMs: 40, Pairs: 90}},
	}
	for _, e := range entries {
		if _, err := s.Append(e); err != nil {
			t.Fatalf("append %s: %v", e.Kind, err)
		}
	}
	got, dropped, err := s.Read()
	if err != nil || dropped != 0 || len(got) != len(entries) {
		t.Fatalf("read %d entries, %d dropped, %v", len(got), dropped, err)
	}
	for i, e := range got {
		if e.SchemaVersion != contract.HistorySchemaVersion || e.Kind != entries[i].Kind || !e.Time.Equal(t0.Add(time.Duration(i+1)*time.Hour)) {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if *got[0].Gate.Comparisons[0].FloorMs != 0.2 || got[1].Change.Step.Gate.PullRequest != 7 {
		t.Errorf("records changed on the way: %+v", got[:2])
	}
}

func TestReadOfNoHistoryIsEmpty(t *testing.T) {
	got, dropped, err := open(t, DefaultBoundBytes).Read()
	if err != nil || len(got) != 0 || dropped != 0 || got == nil {
		t.Fatalf("%v %d %v", got, dropped, err)
	}
}

// The file never grows past its bound, whatever is appended; the oldest entries go first, and
// the count of dropped ones says how many.
func TestNeverGrowsPastItsBound(t *testing.T) {
	s := open(t, 4*MaxEntryBytes)
	n := 0
	for ; n < 6000; n++ {
		if _, err := s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: gate(n+1, "abc1234")}); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(s.path); fi.Size() > s.bound {
			t.Fatalf("after %d appends the file is %d bytes, past its bound %d", n+1, fi.Size(), s.bound)
		}
	}
	got, dropped, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if dropped == 0 || int(dropped)+len(got) != n {
		t.Fatalf("%d kept + %d dropped, want %d in all", len(got), dropped, n)
	}
	if first, last := got[0].Gate.PullRequest, got[len(got)-1].Gate.PullRequest; last != n || first != int(dropped)+1 {
		t.Errorf("kept pull requests %d…%d of 1…%d: the newest must stay, in order", first, last, n)
	}
}

// An append cut off by a crash leaves half a line: it was never acknowledged, so reading skips
// it and the next append replaces it.
func TestTornLastLineIsDroppedByTheNextAppend(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: gate(1, "abc1234")})
	f, _ := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"schema_version":1,"kind":"gate","ti`)
	f.Close()
	if got, _, err := s.Read(); err != nil || len(got) != 1 {
		t.Fatalf("with a torn tail: %d entries, %v", len(got), err)
	}
	if _, err := s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: gate(2, "abc1234")}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Read(); err != nil || len(got) != 2 || got[1].Gate.PullRequest != 2 {
		t.Fatalf("after the next append: %+v, %v", got, err)
	}
}

// A file that is not what perf-host writes is refused with the line and why, and never
// compacted away.
func TestHostileFilesAreRefusedNamingTheLine(t *testing.T) {
	good, _ := json.Marshal(contract.HistoryEntry{SchemaVersion: 1, Kind: contract.HistoryGate, Time: t0, Gate: gate(1, "abc1234")})
	future := bytes.Replace(good, []byte(`"schema_version":1`), []byte(`"schema_version":2`), 1)
	cases := map[string]struct {
		content string
		want    string
	}{
		"corrupt":           {string(good) + "\n{not json\n", "line 2: not valid JSON"},
		"future version":    {string(good) + "\n" + string(future) + "\n", "line 2: schema_version 2 is newer than this perf-host reads (1)"},
		"no version":        {`{"kind":"gate"}` + "\n", "line 1: schema_version: required"},
		"unknown field":     {strings.Replace(string(good), `"kind"`, `"extra":1,"kind"`, 1) + "\n", `line 1: unknown field "extra"`},
		"wrong kind":        {strings.Replace(string(good), `"kind":"gate"`, `"kind":"merge"`, 1) + "\n", `line 1: kind: must be "gate" or`},
		"two records":       {strings.Replace(string(good), `"kind":"gate"`, `"kind":"gate","drift":{}`, 1) + "\n", "a gate entry carries gate and nothing else"},
		"verdict that lies": {strings.Replace(string(good), `"verdict":"red","blocking":false,"percentile"`, `"verdict":"green","blocking":false,"percentile"`, 1) + "\n", `gate.verdict: "green", but the comparisons give "red"`},
		"interval":          {strings.Replace(string(good), `"ci_ms":[0.1,0.7]`, `"ci_ms":[0.5,0.7]`, 1) + "\n", "gate.comparisons[0].ci_ms: must be [low, high] around the estimate 0.4"},
		"huge line":         {`{"schema_version":1,"pad":"` + strings.Repeat("x", MaxEntryBytes) + "\"}\n", "line 1: longer than the 524288 bytes"},
		"a shell in a sha":  {strings.Replace(string(good), `"challenger_sha":"abc1234"`, `"challenger_sha":"$(id)"`, 1) + "\n", "gate.challenger_sha: must be 7-40 lowercase hex characters"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := open(t, DefaultBoundBytes)
			os.WriteFile(s.path, []byte(c.content), 0o600)
			_, _, err := s.Read()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("read: %v, want an error containing %q", err, c.want)
			}
			// Appending past such a file's bound must not compact the evidence away.
			small := &Store{path: s.path, bound: int64(len(c.content)), now: s.now}
			if _, err := small.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: gate(2, "abc1234")}); err == nil {
				t.Fatalf("an append that compacts a %s file succeeded", name)
			}
		})
	}
}

func TestAFilePastItsBoundIsRefused(t *testing.T) {
	s := open(t, 4*MaxEntryBytes)
	os.WriteFile(s.path, bytes.Repeat([]byte("x"), int(s.bound)+1), 0o600)
	if _, _, err := s.Read(); err == nil || !strings.Contains(err.Error(), "past its bound of 2097152: it was not written by this perf-host") {
		t.Fatalf("read: %v", err)
	}
}

func TestAppendRefusesAnInvalidRecordNamingTheField(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	bad := gate(1, "abc1234")
	bad.Comparisons[0].Blocking = true
	if _, err := s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: bad}); err == nil || !strings.Contains(err.Error(), "gate.comparisons[0].blocking: true, but blocked_by names 0 reasons") {
		t.Fatalf("append: %v", err)
	}
	if _, err := os.Stat(s.path); err == nil {
		t.Fatal("a refused entry was written")
	}
}

func TestAppendRefusesAChangeThatLeavesNoLatency(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	bad := gate(1, "abc1234")
	bad.Comparisons[0].EstimateMs, bad.Comparisons[0].CIMs = -40, [2]float64{-41, -39}
	drift := &contract.DriftRecord{
		Workload: "work", Rate: 1000, Percentile: 99, ChampionSHA: "c0ffee1", AncestorSHA: "abc1234",
		EstimateMs: -12, CIMs: [2]float64{-13, -11}, AncestorMs: 10, Pairs: 90,
	}
	for _, c := range []struct {
		entry contract.HistoryEntry
		want  string
	}{
		{contract.HistoryEntry{Kind: contract.HistoryGate, Gate: bad}, "gate.comparisons[0].estimate_ms: -40 takes the champion_ms 40 ms to no latency (at most 0 ms)"},
		{contract.HistoryEntry{Kind: contract.HistoryDrift, Drift: drift}, "drift.estimate_ms: -12 takes the ancestor_ms 10 ms to no latency (at most 0 ms)"},
	} {
		if _, err := s.Append(c.entry); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("append: %v, want %q", err, c.want)
		}
	}
	if _, err := os.Stat(s.path); err == nil {
		t.Fatal("a refused entry was written")
	}
}

// Appends from many writers at once (the CI's gate-record, a promotion, a calibration) neither
// interleave nor lose a line, also while the bound compacts.
func TestConcurrentAppendsKeepEveryLineWhole(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer its own Store, as each perf-host process is.
			s, _ := Open(dir, 4*MaxEntryBytes, fixedClock(t0, time.Second))
			for i := range 200 {
				if _, err := s.Append(contract.HistoryEntry{Kind: contract.HistoryGate, Gate: gate(w*1000+i+1, "abc1234")}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s, _ := Open(dir, 4*MaxEntryBytes, fixedClock(t0, time.Second))
	got, dropped, err := s.Read()
	if err != nil || int(dropped)+len(got) != 1600 {
		t.Fatalf("%d entries + %d dropped of 1600: %v", len(got), dropped, err)
	}
}

func TestClockFromTheEnvironment(t *testing.T) {
	c, err := ClockFrom("720h")
	if err != nil || time.Until(c()) < 719*time.Hour {
		t.Fatalf("offset 720h: %v, %v", c(), err)
	}
	if _, err := ClockFrom("a month"); err == nil || !strings.Contains(err.Error(), "PERF_GATE_CLOCK_OFFSET: a Go duration such as 720h") {
		t.Fatalf("bad offset: %v", err)
	}
}

func TestOpenRefusesATinyBound(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir()), 1000, nil); err == nil {
		t.Fatal("a bound of 1000 bytes was accepted")
	}
}

// BenchmarkAppend and BenchmarkReadFullHistory measure what docs/design/0023-history.md quotes:
// an append (fsynced) and reading a history filled to the default bound, with the bytes a
// one-comparison gate takes.
func BenchmarkAppend(b *testing.B) {
	s, _ := Open(b.TempDir(), DefaultBoundBytes, fixedClock(t0, time.Second))
	e := contract.HistoryEntry{Kind: contract.HistoryGate, RunID: "pr7-abc1234-1-0", Gate: gate(7, "abc1234")}
	line, _ := json.Marshal(e)
	for b.Loop() {
		if _, err := s.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(line)+1), "bytes/entry")
}

func BenchmarkReadFullHistory(b *testing.B) {
	s, _ := Open(b.TempDir(), DefaultBoundBytes, fixedClock(t0, time.Second))
	line, _ := json.Marshal(contract.HistoryEntry{SchemaVersion: 1, Kind: contract.HistoryGate, Time: t0, RunID: "pr7-abc1234-1-0", Gate: gate(7, "abc1234")})
	line = append(line, '\n')
	n := int(DefaultBoundBytes*3/4) / len(line)
	os.WriteFile(s.path, bytes.Repeat(line, n), 0o600)
	for b.Loop() {
		if got, _, err := s.Read(); err != nil || len(got) != n {
			b.Fatal(len(got), err)
		}
	}
	b.ReportMetric(float64(n), "entries")
}
