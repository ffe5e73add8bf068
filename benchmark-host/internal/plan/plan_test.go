package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

const validPlan = `{"targets":{"champion":"http://127.0.0.1:8001","challenger":"http://127.0.0.1:8002"},
  "rate":100,"slice_seconds":9,"pairs":10,"seed":5,"requests":[{"path":"/x"}]}`

func TestDefaultsAreFilled(t *testing.T) {
	p, err := Parse(strings.NewReader(validPlan), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p.Order != contract.OrderAlternate || *p.SliceWarmupMs != 200 || *p.SendWindowUs != 250 || p.Connections != 10 || p.TimeoutMs != 2000 ||
		p.MaxQueue != 200 || p.Requests[0].Method != "GET" || p.RunID != "run" {
		t.Errorf("defaults: %+v", p)
	}
}

func TestBadPlansNameTheField(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, from, to, field string }{
		{"unknown field", `"rate":100`, `"rate":100,"rps":5`, "rps"},
		{"unknown nested field", `"path":"/x"`, `"path":"/x","bdy":"1"`, "bdy"},
		{"zero rate", `"rate":100`, `"rate":0`, "rate"},
		{"negative rate", `"rate":100`, `"rate":-3`, "rate"},
		{"rate of the wrong type", `"rate":100`, `"rate":"fast"`, "rate"},
		{"missing challenger", `"challenger":"http://127.0.0.1:8002"`, `"challenger":""`, "targets.challenger"},
		{"bad target scheme", `"champion":"http://127.0.0.1:8001"`, `"champion":"ftp://x"`, "targets.champion"},
		{"zero pairs", `"pairs":10`, `"pairs":0`, "pairs"},
		{"bad order", `"seed":5`, `"seed":5,"order":"random"`, "order"},
		{"missing body file", `"path":"/x"`, `"path":"/x","body_file":"nope.json"`, "requests[0].body_file"},
		{"unclosed template", `"path":"/x"`, `"path":"/x/{{seq"`, "requests[0].path"},
		{"unknown template", `"path":"/x"`, `"path":"/x/{{user}}"`, "requests[0].path"},
		{"bad rand bound", `"path":"/x"`, `"path":"/x/{{rand 0}}"`, "requests[0].path"},
		{"bad header template", `"path":"/x"`, `"path":"/x","headers":{"K":"{{nope}}"}`, "requests[0].headers.K"},
		{"path without slash", `"path":"/x"`, `"path":"x"`, "requests[0].path"},
		{"no requests", `"requests":[{"path":"/x"}]`, `"requests":[]`, "requests"},
		{"slice warmup too long", `"seed":5`, `"seed":5,"slice_warmup_ms":9000`, "slice_warmup_ms"},
		{"run id with a slash", `"seed":5`, `"seed":5,"run_id":"a/b"`, "run_id"},
		{"seed beyond 2^53", `"seed":5`, `"seed":9007199254740993`, "seed"},
		{"https target", `"champion":"http://127.0.0.1:8001"`, `"champion":"https://127.0.0.1:8001"`, "targets.champion: https:// is not supported"},
		{"more loops than connections", `"seed":5`, `"seed":5,"connections":2,"generator_cpus":3`, "generator_cpus: must be at most connections (2)"},
		{"more loops than CPUs", `"seed":5`, `"seed":5,"connections":1000,"generator_cpus":64`, "generator_cpus: must be at most the"},
		{"grpc call in an http1 plan", `"path":"/x"`, `"grpc":{"method":"a.B/C"}`, "requests[0].grpc: only a plan with protocol grpc"},
		{"unknown protocol", `"seed":5`, `"seed":5,"protocol":"h3"`, "protocol: must be"},
		{"descriptor set without grpc", `"seed":5`, `"seed":5,"proto_descriptor_set":"a.pb"`, "proto_descriptor_set: only a grpc plan"},
		{"grpc plan with a path", `"seed":5,"requests":[{"path":"/x"}]`, `"seed":5,"protocol":"grpc","requests":[{"path":"/x","grpc":{"method":"a.B/C"}}]`, "requests[0]: a gRPC call has no method or path"},
		{"zero-ish loops", `"seed":5`, `"seed":5,"generator_cpus":-1`, "generator_cpus"},
		{"send window past wrk2's resolution", `"seed":5`, `"seed":5,"send_window_us":5000`, "send_window_us: must be"},
		{"negative send window", `"seed":5`, `"seed":5,"send_window_us":-1`, "send_window_us"},
		{"Content-Length header", `"path":"/x"`, `"path":"/x","headers":{"Content-Length":"3"}`, "requests[0].headers.Content-Length: is computed"},
		{"CR and LF in a path", `"path":"/x"`, `"path":"/x\r\nX-Injected: 1"`, "requests[0].path: must be a path starting with /, without control characters"},
		{"class name with a pipe", `"path":"/x"`, `"path":"/x","name":"a|b"`, "requests[0].name: must be"},
		{"class name with a newline", `"path":"/x"`, `"path":"/x","name":"a\nb"`, "requests[0].name: must be"},
		{"class name twice", `"requests":[{"path":"/x"}]`, `"requests":[{"path":"/x","name":"items"},{"path":"/y","name":"items"}]`, `requests[1].name: "items" names requests[0] too`},
		{"header value with CRLF", `"path":"/x"`, `"path":"/x","headers":{"X":"a\r\nEvil: 1"}`, "requests[0].headers.X: must not contain CR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := strings.Replace(validPlan, c.from, c.to, 1)
			if js == validPlan {
				t.Fatalf("case does not change the plan")
			}
			_, err := Parse(strings.NewReader(js), dir)
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("want an error naming %q, got %v", c.field, err)
			}
		})
	}
}

// A grpc plan's calls: a full method name, a message that is a JSON object, lowercase
// metadata of the caller's own; each refused naming its field.
func TestGRPCPlans(t *testing.T) {
	base := `{"targets":{"champion":"http://127.0.0.1:8001","challenger":"http://127.0.0.1:8002"},"rate":100,"slice_seconds":1,"pairs":1,"protocol":"grpc","requests":[%s]}`
	good := `{"grpc":{"method":"helloworld.Greeter/SayHello","message":{"name":"{{seq}}"},"metadata":{"x-tenant":"{{arm}}"}}}`
	p, err := Parse(strings.NewReader(fmt.Sprintf(base, good)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Compiled()[0].GRPC; c == nil || c.Method != "helloworld.Greeter/SayHello" || c.Message.IsStatic() || len(c.Metadata) != 1 {
		t.Fatalf("compiled call %+v", c)
	}
	for _, c := range []struct{ req, field string }{
		{`{"path":"/x"}`, "requests[0].grpc: is required"},
		{`{"grpc":{"method":"SayHello"}}`, "requests[0].grpc.method: must be package.Service/Method"},
		{`{"grpc":{"method":"a.B/C","message":[1]}}`, "requests[0].grpc.message: must be a JSON object"},
		{`{"grpc":{"method":"a.B/C","message":{"n":"{{nope}}"}}}`, "requests[0].grpc.message"},
		{`{"grpc":{"method":"a.B/C","metadata":{"X-Up":"1"}}}`, "requests[0].grpc.metadata.X-Up: must be a lowercase"},
		{`{"grpc":{"method":"a.B/C","metadata":{"grpc-timeout":"1S"}}}`, "requests[0].grpc.metadata.grpc-timeout"},
		{`{"grpc":{"method":"a.B/C"},"body":"x"}`, "requests[0]: a gRPC call sends grpc.message"},
	} {
		_, err := Parse(strings.NewReader(fmt.Sprintf(base, c.req)), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: want an error naming %q, got %v", c.req, c.field, err)
		}
	}
	// The host's --loadgen-cpus placement bounds generator_cpus: its default, and an explicit value.
	js := `{"targets":{"champion":"http://127.0.0.1:8001","challenger":"http://127.0.0.1:8002"},"rate":90000,"slice_seconds":1,"pairs":1,"requests":[{"path":"/"}]%s}`
	var cp contract.Plan
	if err := contract.Decode(strings.NewReader(fmt.Sprintf(js, "")), &cp); err != nil {
		t.Fatal(err)
	}
	if p, err := Compile(cp, t.TempDir(), WithGeneratorCPUs(1)); err != nil || p.GeneratorCPUs != 1 {
		t.Errorf("default under a 1-CPU placement: %v, generator_cpus %d", err, p.GeneratorCPUs)
	}
	cp.GeneratorCPUs = 2
	if _, err := Compile(cp, t.TempDir(), WithGeneratorCPUs(1)); err == nil || !strings.Contains(err.Error(), "generator_cpus: must be at most the 1 CPUs") {
		t.Errorf("want generator_cpus refused above a 1-CPU placement, got %v", err)
	}
}

// One event loop holds ~RatePerGeneratorCPU; above it the default adds loops, never more
// than the machine's CPUs or the connections.
func TestGeneratorCPUsDefaultFollowsTheRate(t *testing.T) {
	for _, c := range []struct {
		rate, conns, want int
	}{
		{100, 10, 1},
		{RatePerGeneratorCPU, 10, 1},
		{RatePerGeneratorCPU + 1, 10, min(2, runtime.NumCPU())},
		{1_000_000, 10, min(10, runtime.NumCPU())},
		{1_000_000, 1, 1},
	} {
		js := strings.Replace(validPlan, `"rate":100`, fmt.Sprintf(`"rate":%d,"connections":%d`, c.rate, c.conns), 1)
		p, err := Parse(strings.NewReader(js), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if p.GeneratorCPUs != c.want {
			t.Errorf("rate %d, %d connections: generator_cpus %d, want %d", c.rate, c.conns, p.GeneratorCPUs, c.want)
		}
	}
}

func TestBodyFileIsReadRelativeToThePlan(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "body.json"), []byte(`{"id":"{{seq}}"}`), 0o644)
	js := strings.Replace(validPlan, `"path":"/x"`, `"method":"post","path":"/x","body_file":"body.json","weight":3`, 1)
	os.WriteFile(filepath.Join(dir, "plan.json"), []byte(js), 0o644)
	p, err := Load(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(p.Compiled()[0].Body.Append(nil, &Vars{Seq: 42}))
	if got != `{"id":"42"}` || p.Compiled()[0].Method != "POST" {
		t.Errorf("body %q method %s", got, p.Compiled()[0].Method)
	}
}

func TestTemplatesExpandDeterministically(t *testing.T) {
	tpl, err := ParseTemplate("/t/{{run}}/{{arm}}/{{slice}}/{{seq}}/{{rand 10}}/{{ rand }}")
	if err != nil {
		t.Fatal(err)
	}
	v := Vars{Seed: 9, Seq: 7, Run: "r1", Arm: contract.Challenger, Slice: 3}
	a := string(tpl.Append(nil, &v))
	b := string(tpl.Append(nil, &v))
	if a != b || !strings.HasPrefix(a, "/t/r1/challenger/3/7/") {
		t.Errorf("expansion %q / %q", a, b)
	}
	keys := map[string]bool{}
	pool, _ := ParseTemplate("{{rand 10}}")
	for draw := range uint64(1000) {
		keys[string(pool.Append(nil, &Vars{Seed: 1, Draw: draw}))] = true
	}
	if len(keys) != 10 {
		t.Errorf("{{rand 10}} gave %d distinct keys, want 10", len(keys))
	}
	if pool.IsStatic() {
		t.Errorf("a template with a placeholder is not static")
	}
}

func TestWeightsPickInProportion(t *testing.T) {
	js := strings.Replace(validPlan, `[{"path":"/x"}]`, `[{"path":"/a","weight":1},{"path":"/b","weight":3}]`, 1)
	p, err := Parse(strings.NewReader(js), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	counts := [2]int{}
	for seq := range uint64(20000) {
		counts[p.Pick(Uniform(5, seq))]++
	}
	if share := float64(counts[1]) / 20000; share < 0.73 || share > 0.77 {
		t.Errorf("weight 3 of 4 picked %.3f of the time", share)
	}
}
