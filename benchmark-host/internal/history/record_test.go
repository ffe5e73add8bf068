package history

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

func gateRun(id string) Run {
	return Run{ID: id, Kind: contract.KindAB, Status: contract.StatusOK, Base: contract.BaseChampion, ChampionSHA: "c0ffee1", ChallengerSHA: "abc1234", Workload: "work", Rate: 1000}
}

func body(v any) *strings.Reader {
	b, _ := json.Marshal(v)
	return strings.NewReader(string(b))
}

func TestRecordsAGateBackedByItsRunOnce(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	g := gate(7, "abc1234")
	run := gateRun(g.Runs[0])
	if _, err := s.RecordGate(run, body(g)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordGate(run, body(g)); err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), "is already recorded") {
		t.Fatalf("a second record of the run: %v", err)
	}
	entries, _, _ := s.Read()
	if len(entries) != 1 || entries[0].RunID != run.ID || entries[0].Gate.PullRequest != 7 {
		t.Fatalf("%+v", entries)
	}
}

// A record the run does not back, or that is not what the contract says, is refused naming why;
// nothing is written.
func TestRefusesARecordItsRunDoesNotBack(t *testing.T) {
	g := gate(7, "abc1234")
	cases := map[string]struct {
		run  func(*Run)
		body string
		want string
	}{
		"an A/A run":          {run: func(r *Run) { r.Kind = contract.KindAA }, want: `a gate is recorded from an A/B run that ended ok; this one is kind "aa"`},
		"a failed run":        {run: func(r *Run) { r.Status = contract.StatusError }, want: `status "error"`},
		"another challenger":  {run: func(r *Run) { r.ChallengerSHA = "def5678" }, want: "measured def5678 against champion c0ffee1, not abc1234"},
		"another workload":    {run: func(r *Run) { r.Workload = "other" }, want: "measured other@1000, which the record does not compare"},
		"a run not among its": {run: func(r *Run) { r.ID = "pr7-abc1234-2-0" }, want: "run pr7-abc1234-2-0 is not among the record's runs"},
		"unknown field":       {body: strings.Replace(mustJSON(g), `"verdict"`, `"verdikt":"red","verdict"`, 1), want: `gate: unknown field "verdikt"`},
		"not JSON":            {body: "{", want: "gate: not valid JSON"},
		"too long":            {body: `{"x":"` + strings.Repeat("a", MaxEntryBytes) + `"}`, want: "the record is longer than"},
		"a lying verdict":     {body: strings.Replace(mustJSON(g), `"verdict":"red","blocking":false,"percentile"`, `"verdict":"grey","blocking":false,"percentile"`, 1), want: `gate: verdict: "grey", but the comparisons give "red"`},
		"a trailing document": {body: mustJSON(g) + "{}", want: "trailing data"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := open(t, DefaultBoundBytes)
			run := gateRun(g.Runs[0])
			if c.run != nil {
				c.run(&run)
			}
			in := c.body
			if in == "" {
				in = mustJSON(g)
			}
			_, err := s.RecordGate(run, strings.NewReader(in))
			if err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a refusal containing %q", err, c.want)
			}
			if got, _, _ := s.Read(); len(got) != 0 {
				t.Fatalf("a refused record was written: %+v", got)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRecordsADriftFromARunAgainstTheAncestor(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	d := contract.DriftRecord{Workload: "work", Rate: 1000, Percentile: 99, ChampionSHA: "abc1234", AncestorSHA: "c0ffee1", EstimateMs: 0.3, CIMs: [2]float64{0.1, 0.5}, AncestorMs: 40, Pairs: 90}
	run := Run{ID: "calibrate-1-drift-0", Kind: contract.KindAB, Status: contract.StatusOK, Base: contract.BaseAncestor, ChampionSHA: "c0ffee1", ChallengerSHA: "abc1234", Workload: "work", Rate: 1000}
	gateLike := run
	gateLike.Base = contract.BaseChampion
	if _, err := s.RecordDrift(gateLike, body(d)); err == nil || !strings.Contains(err.Error(), `base "champion"`) {
		t.Fatalf("a gate's run as a drift: %v", err)
	}
	if _, err := s.RecordDrift(run, body(d)); err != nil {
		t.Fatal(err)
	}
	swapped := d
	swapped.ChampionSHA, swapped.AncestorSHA = d.AncestorSHA, d.ChampionSHA
	if _, err := s.RecordDrift(run, body(swapped)); err == nil || !strings.Contains(err.Error(), "not champion c0ffee1 against ancestor abc1234") {
		t.Fatalf("swapped builds: %v", err)
	}
}

func TestAPromotionTakesItsPullRequestsLastGateAsTheStep(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	first := gate(7, "abc1234")
	later := gate(7, "abc1234")
	later.Runs = []string{"pr7-abc1234-2-0"}
	later.Comparisons[0].EstimateMs, later.Comparisons[0].CIMs = 0.5, [2]float64{0.3, 0.7}
	s.RecordGate(gateRun(first.Runs[0]), body(first))
	s.RecordGate(gateRun(later.Runs[0]), body(later))
	e, err := s.RecordChange(contract.HistoryPromotion, "9999999", "c0ffee1", 7)
	if err != nil || e.Change.Step == nil || e.Change.Step.Gate.Comparisons[0].EstimateMs != 0.5 {
		t.Fatalf("%+v, %v", e.Change, err)
	}
	// Without a pull request, the build's own last gate; a build no gate measured takes none.
	if e, _ := s.RecordChange(contract.HistoryPromotion, "abc1234", "9999999", 0); e.Change.Step == nil {
		t.Error("the build's own gate was not found")
	}
	if e, _ := s.RecordChange(contract.HistoryPromotion, "fff0000", "abc1234", 0); e.Change.Step != nil {
		t.Error("a step for a build no gate measured")
	}
	if e, _ := s.RecordChange(contract.HistoryRollback, "abc1234", "fff0000", 0); e.Change.Step != nil || e.Kind != contract.HistoryRollback {
		t.Errorf("rollback: %+v", e)
	}
}

func TestTheDocumentListsAncestorsNewestFirst(t *testing.T) {
	s := open(t, DefaultBoundBytes)
	var reigns []contract.Ancestor
	for i, sha := range []string{"aaa0001", "aaa0002", "aaa0003"} {
		reigns = Succession(reigns, sha, t0.Add(time.Duration(i)*24*time.Hour))
	}
	h, err := s.Document("aaa0003", reigns)
	if err != nil || h.Champion != "aaa0003" || h.Ancestors[0].SHA != "aaa0003" || h.Ancestors[0].Until != nil || h.SchemaVersion != contract.HistorySchemaVersion || h.BoundBytes != DefaultBoundBytes {
		t.Fatalf("%+v, %v", h, err)
	}
	for _, a := range h.Ancestors[1:] {
		if a.Until == nil {
			t.Errorf("an earlier reign without its end: %+v", a)
		}
	}
}
