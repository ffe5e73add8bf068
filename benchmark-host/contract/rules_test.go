package contract

import (
	"encoding/json"
	"os"
	"testing"
)

// readVectors decodes a shared test-vector file (the TypeScript side reads the same files).
func readVectors(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// eachVector calls check on every vector of a file of the form {"vectors": […]}.
func eachVector[V any](t *testing.T, file string, check func(V)) {
	t.Helper()
	var f struct {
		Vectors []V `json:"vectors"`
	}
	readVectors(t, file, &f)
	for _, v := range f.Vectors {
		check(v)
	}
}

// The same vectors are checked on the TypeScript side (test/contract/rules.test.ts).
func TestKeyMatchesTheSharedVectors(t *testing.T) {
	type vector struct {
		Workload string  `json:"workload"`
		Rate     float64 `json:"rate"`
		Key      string  `json:"key"`
	}
	eachVector(t, "testdata/keys.json", func(v vector) {
		if got := Key(v.Workload, v.Rate); got != v.Key {
			t.Errorf("Key(%q, %v) = %q, want %q", v.Workload, v.Rate, got, v.Key)
		}
	})
}

func TestFloorKeyMatchesTheSharedVectors(t *testing.T) {
	type vector struct {
		Workload   string  `json:"workload"`
		Rate       float64 `json:"rate"`
		Percentile float64 `json:"percentile"`
		Key        string  `json:"key"`
	}
	eachVector(t, "testdata/floor-keys.json", func(v vector) {
		if got := FloorKey(v.Workload, v.Rate, v.Percentile); got != v.Key {
			t.Errorf("FloorKey(%q, %v, %v) = %q, want %q", v.Workload, v.Rate, v.Percentile, got, v.Key)
		}
	})
}

func TestSampleBudgetMatchesTheSharedVectors(t *testing.T) {
	type vector struct {
		Percentile float64 `json:"percentile"`
		Budget     int64   `json:"budget"`
	}
	eachVector(t, "testdata/sample-budget.json", func(v vector) {
		if got := SampleBudget(v.Percentile); got != v.Budget {
			t.Errorf("SampleBudget(%v) = %d, want %d", v.Percentile, got, v.Budget)
		}
	})
}

func TestLimitsCheckTheirBounds(t *testing.T) {
	for _, c := range []struct {
		r    Range
		v    float64
		want string
	}{
		{SliceSeconds, 0, "must be in (0, 3600], got 0"},
		{SliceSeconds, 3600, ""},
		{SliceSeconds, 3600.5, "must be in (0, 3600], got 3600.5"},
		{Rate, 1e6, ""},
		{Rate, 2e6, "must be in (0, 1000000], got 2000000"},
		{Weight, -1, "must be positive, got -1"},
		{Count, -1, "must be at least 0, got -1"},
		{Percentile, 99.9, ""},
		{Percentile, 100, "must be in (0, 100), got 100"},
		{Percentile, 0, "must be in (0, 100), got 0"},
	} {
		err := c.r.Check(c.v)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%v.Check(%v) = %q, want %q", c.r, c.v, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%v.Check(%v) passed, want %q", c.r, c.v, c.want)
		}
	}
	if err := Name.Check(".."); err == nil {
		t.Error(`Name accepts ".."`)
	}
	if err := Orders.Check("random"); err == nil || err.Error() != `must be "alternate" or "balanced" or "abba", got "random"` {
		t.Errorf("Orders.Check: %v", err)
	}
}

func TestServiceArgumentsMatchTheSharedVectors(t *testing.T) {
	var f struct {
		Vars    map[string]string `json:"vars"`
		Vectors []struct {
			Arg      string  `json:"arg"`
			Expanded *string `json:"expanded"`
			Error    string  `json:"error"`
		} `json:"vectors"`
		Env []struct {
			Name     string `json:"name"`
			PortEnv  string `json:"port_env"`
			HostSets bool   `json:"host_sets"`
		} `json:"env"`
	}
	readVectors(t, "testdata/service-args.json", &f)
	for _, v := range f.Vectors {
		got, err := ExpandArg(v.Arg, f.Vars)
		switch {
		case v.Expanded != nil && (err != nil || got != *v.Expanded):
			t.Errorf("ExpandArg(%q) = %q, %v; want %q", v.Arg, got, err, *v.Expanded)
		case v.Expanded == nil && (err == nil || err.Error() != v.Error):
			t.Errorf("ExpandArg(%q) = %q, %v; want the error %s", v.Arg, got, err, v.Error)
		}
	}
	for _, v := range f.Env {
		if HostSetsEnv(v.Name, v.PortEnv) != v.HostSets {
			t.Errorf("HostSetsEnv(%q, %q) = %v", v.Name, v.PortEnv, !v.HostSets)
		}
	}
}
