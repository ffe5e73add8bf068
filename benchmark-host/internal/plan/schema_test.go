package plan

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// planSchema reads the generated schema of the plan: the limits and defaults the TypeScript
// side is tested against.
func planSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../contract/schema/plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// withField is validPlan with one top-level field set (added or replaced).
func withField(t *testing.T, name string, value any) string {
	t.Helper()
	var doc map[string]any
	json.Unmarshal([]byte(validPlan), &doc)
	doc[name] = value
	if name == "slice_warmup_ms" {
		doc["slice_seconds"] = 3600.0 // the warmup must also be shorter than the slice
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// Every default the schema promises is the one Compile fills.
func TestCompileFillsTheSchemasDefaults(t *testing.T) {
	p, err := Parse(strings.NewReader(validPlan), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	filled, _ := json.Marshal(p.Plan)
	var got map[string]any
	json.Unmarshal(filled, &got)
	props := planSchema(t)["properties"].(map[string]any)
	n := 0
	for name, prop := range props {
		def, ok := prop.(map[string]any)["default"]
		if !ok {
			continue
		}
		n++
		if g, present := got[name]; present && g != def || !present && def != 0.0 {
			t.Errorf("%s: the schema's default is %v, Compile fills %v", name, def, g)
		}
	}
	reqDefaults := props["requests"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	if m := reqDefaults["method"].(map[string]any)["default"]; p.Requests[0].Method != m {
		t.Errorf("requests[].method: the schema's default is %v, Compile fills %v", m, p.Requests[0].Method)
	}
	if w := reqDefaults["weight"].(map[string]any)["default"]; p.Requests[0].Weight != w {
		t.Errorf("requests[].weight: the schema's default is %v, Compile fills %v", w, p.Requests[0].Weight)
	}
	if n < 6 {
		t.Errorf("only %d defaults in the schema", n)
	}
}

// Compile accepts every number at the schema's bounds and refuses it just beyond them, naming
// the field: the Go side enforces exactly the limits the TypeScript side is tested against.
func TestCompileEnforcesTheSchemasBounds(t *testing.T) {
	schema := planSchema(t)
	props := schema["properties"].(map[string]any)
	required := map[string]bool{}
	for _, name := range schema["required"].([]any) {
		required[name.(string)] = true
	}
	checked := 0
	for name, raw := range props {
		prop := raw.(map[string]any)
		integer := prop["type"] == "integer"
		step := 0.5
		if integer {
			step = 1
		}
		type probe struct {
			value float64
			ok    bool
		}
		var probes []probe
		if lo, ok := prop["minimum"].(float64); ok {
			probes = append(probes, probe{lo, true}, probe{lo - step, false})
		}
		if lo, ok := prop["exclusiveMinimum"].(float64); ok {
			probes = append(probes, probe{lo + step, true}, probe{lo, false})
		}
		if hi, ok := prop["maximum"].(float64); ok {
			// Two maxima are bounded further by another field: the slice, and connections.
			probes = append(probes, probe{hi, name != "slice_warmup_ms" && name != "generator_cpus"}, probe{hi + step, false})
		}
		for _, pr := range probes {
			if pr.value == 0 && !pr.ok && !required[name] {
				continue // 0 is how Go reads an optional field left out: it takes the default
			}
			checked++
			_, err := Parse(strings.NewReader(withField(t, name, pr.value)), t.TempDir())
			switch {
			case pr.ok && err != nil:
				t.Errorf("%s = %v is within the schema's bounds, but Compile refuses it: %v", name, pr.value, err)
			case !pr.ok && (err == nil || !strings.Contains(err.Error(), name)):
				t.Errorf("%s = %v is beyond the schema's bounds; want an error naming it, got %v", name, pr.value, err)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d probes", checked)
	}
	t.Logf("%d probes", checked)
}
