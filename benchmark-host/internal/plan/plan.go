// Package plan compiles the load generator's plan (contract.Plan): what to send, to which two
// targets, at what rate, in which slice order. Compile validates everything against the
// contract's limits up front, so that a bad plan fails before any load is sent, with an error
// that names the field.
package plan

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Plan is a validated plan (contract.Plan, the load generator's input) with its workload
// compiled: templates parsed, body files read, weights normalised.
type Plan struct {
	contract.Plan

	compiled []CompiledRequest
	weights  []float64 // cumulative, normalised to 1

	cpus int // CPUs the generator may use: the default's cap and the explicit value's bound

	// DescriptorSets are the proto_descriptor_set file's bytes (or proto_files compiled) as
	// each arm's build has it (champion, challenger): read by Load from beside the plan, by
	// perf-host from each arm's release. Empty: methods are resolved by server reflection.
	DescriptorSets [2][]byte
}

// CompiledRequest is a Request with its templates parsed and its body file read.
type CompiledRequest struct {
	Method  string
	Path    Template
	Headers []CompiledHeader
	Body    Template
	// GRPC is the call of a grpc plan's request; nil otherwise.
	GRPC *CompiledCall
}

// CompiledCall is a gRPC call with its message's JSON text and metadata values as templates.
type CompiledCall struct {
	Method   string // package.Service/Method
	Message  Template
	Metadata []CompiledHeader
}

// CompiledHeader is one header whose value may hold templates.
type CompiledHeader struct {
	Name  string
	Value Template
}

// FieldError names the plan field at fault.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "plan: " + e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Load reads and validates a plan file; body_file paths are relative to the plan's directory.
func Load(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	defer f.Close()
	p, err := Parse(f, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if p.ProtoDescriptorSet != "" {
		set := p.ProtoDescriptorSet
		if !filepath.IsAbs(set) {
			set = filepath.Join(filepath.Dir(path), set)
		}
		b, err := os.ReadFile(set)
		if err != nil {
			return nil, fieldErr("proto_descriptor_set", "cannot read %q: %v", p.ProtoDescriptorSet, errors.Unwrap(err))
		}
		p.DescriptorSets = [2][]byte{b, b}
	}
	if len(p.ProtoFiles) > 0 {
		b, err := p.CompileProtoFiles(context.Background(), os.DirFS(filepath.Dir(path)))
		if err != nil {
			return nil, err
		}
		p.DescriptorSets = [2][]byte{b, b}
	}
	return p, nil
}

// Parse decodes a plan strictly and compiles it.
func Parse(r io.Reader, baseDir string) (*Plan, error) {
	var p contract.Plan
	if err := contract.Decode(r, &p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return Compile(p, baseDir)
}

// CompileOption changes what Compile allows.
type CompileOption func(*Plan)

// WithGeneratorCPUs says the generator will run on n CPUs (perf-host's --loadgen-cpus), not
// on the CPUs this process may use now: generator_cpus defaults to at most n and may not
// exceed it.
func WithGeneratorCPUs(n int) CompileOption {
	return func(p *Plan) {
		if n > 0 {
			p.cpus = n
		}
	}
}

// Compile validates a plan against the contract's limits, fills its defaults (the schema's
// `default`s) and compiles its workload. body_file paths are relative to baseDir.
func Compile(cp contract.Plan, baseDir string, opts ...CompileOption) (*Plan, error) {
	p := &Plan{Plan: cp, cpus: UsableCPUs()}
	for _, o := range opts {
		o(p)
	}
	for _, step := range []func() error{p.fillDefaults, p.checkIdentity, p.checkTargets, p.checkSchedule, p.checkTraffic} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := p.compileRequests(baseDir); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plan) fillDefaults() error {
	if p.RunID == "" {
		p.RunID = "run"
	}
	if p.Workload == "" {
		p.Workload = "default"
	}
	if p.Order == "" {
		p.Order = contract.OrderAlternate
	}
	if p.Protocol == "" {
		p.Protocol = contract.ProtocolHTTP1
	}
	if p.Seed == nil {
		s := rand.Int64N(int64(contract.Seed.Max))
		p.Seed = &s
	}
	if p.SliceWarmupMs == nil {
		d := 200
		p.SliceWarmupMs = &d
	}
	if p.SendWindowUs == nil {
		d := DefaultSendWindowUs
		p.SendWindowUs = &d
	}
	if p.Connections == 0 {
		p.Connections = 10
	}
	if p.TimeoutMs == 0 {
		p.TimeoutMs = 2000
	}
	if p.GeneratorCPUs == 0 {
		p.GeneratorCPUs = max(1, min(int(math.Ceil(p.Rate/RatePerGeneratorCPU)), p.cpus, p.Connections))
	}
	if p.MaxQueue == 0 {
		// Anything queued longer than a timeout's worth of schedule is already lost.
		p.MaxQueue = max(64, int(math.Ceil(p.Rate*float64(p.TimeoutMs)/1000)))
	}
	return nil
}

// check names the field whose value lies outside its limit.
func check(field string, err error) error {
	if err != nil {
		return &FieldError{Field: field, Msg: err.Error()}
	}
	return nil
}

func (p *Plan) checkIdentity() error {
	if p.Builds != nil {
		b := p.Builds
		if err := cmp.Or(check("builds.kind", contract.Kinds.Check(b.Kind)),
			check("builds.champion_sha", contract.SHA.Check(b.ChampionSHA)),
			check("builds.challenger_sha", contract.SHA.Check(b.ChallengerSHA))); err != nil {
			return err
		}
	}
	return cmp.Or(check("run_id", contract.Name.Check(p.RunID)), check("workload", contract.Name.Check(p.Workload)))
}

func (p *Plan) checkTargets() error {
	if p.Targets == nil {
		return fieldErr("targets", "is required (the two base URLs, such as http://127.0.0.1:8001)")
	}
	return cmp.Or(validTarget("targets.champion", p.Targets.Champion), validTarget("targets.challenger", p.Targets.Challenger))
}

func (p *Plan) checkSchedule() error {
	if err := cmp.Or(
		check("rate", contract.Rate.Check(p.Rate)),
		check("slice_seconds", contract.SliceSeconds.Check(p.SliceSeconds)),
		check("pairs", contract.Pairs.Check(float64(p.Pairs))),
		check("order", contract.Orders.Check(p.Order)),
		check("protocol", contract.Protocols.Check(p.Protocol)),
		check("seed", contract.Seed.Check(float64(*p.Seed))),
		check("warmup_seconds", contract.WarmupSeconds.Check(p.WarmupSeconds)),
		check("slice_warmup_ms", contract.SliceWarmupMs.Check(float64(*p.SliceWarmupMs))),
	); err != nil {
		return err
	}
	if float64(*p.SliceWarmupMs) >= p.SliceSeconds*1000 {
		return fieldErr("slice_warmup_ms", "must be less than the slice (slice_seconds*1000 = %v), got %d", p.SliceSeconds*1000, *p.SliceWarmupMs)
	}
	return nil
}

func (p *Plan) checkTraffic() error {
	return cmp.Or(
		check("connections", contract.Connections.Check(float64(p.Connections))),
		check("generator_cpus", contract.GeneratorCPUs.Check(float64(p.GeneratorCPUs))),
		check("send_window_us", contract.SendWindowUs.Check(float64(*p.SendWindowUs))),
		p.checkGeneratorCPUs(),
		check("timeout_ms", contract.TimeoutMs.Check(float64(p.TimeoutMs))),
		check("max_queue", contract.MaxQueue.Check(float64(p.MaxQueue))),
	)
}

func (p *Plan) compileRequests(baseDir string) error {
	if len(p.Requests) < contract.AtLeastOne.Min {
		return fieldErr("requests", "must list at least one request")
	}
	if p.ProtoDescriptorSet != "" && p.Protocol != contract.ProtocolGRPC {
		return fieldErr("proto_descriptor_set", "only a grpc plan describes its methods (protocol is %q)", p.Protocol)
	}
	if err := p.checkProtoFiles(); err != nil {
		return err
	}
	total := 0.0
	p.compiled = make([]CompiledRequest, len(p.Requests))
	named := map[string]int{}
	for i := range p.Requests {
		r := &p.Requests[i]
		field := fmt.Sprintf("requests[%d]", i)
		if err := checkClassName(r.Name, field, i, named); err != nil {
			return err
		}
		var c CompiledRequest
		var err error
		if p.Protocol == contract.ProtocolGRPC {
			c, err = compileCall(r, field)
		} else {
			c, err = compileRequest(r, field, baseDir)
		}
		if err != nil {
			return err
		}
		if r.Weight == 0 {
			r.Weight = 1
		}
		if err := check(field+".weight", contract.Weight.Check(r.Weight)); err != nil {
			return err
		}
		total += r.Weight
		p.compiled[i] = c
	}
	p.weights = make([]float64, len(p.Requests))
	acc := 0.0
	for i, r := range p.Requests {
		acc += r.Weight / total
		p.weights[i] = acc
	}
	p.weights[len(p.weights)-1] = 1
	return nil
}

// checkClassName refuses a request class name of the wrong form or one that an earlier entry
// (named holds their indices by name) already has: the report tells classes apart by name.
func checkClassName(name, field string, i int, named map[string]int) error {
	if name == "" {
		return nil
	}
	if err := check(field+".name", contract.ClassName.Check(name)); err != nil {
		return err
	}
	if j, ok := named[name]; ok {
		return fieldErr(field+".name", "%q names requests[%d] too: each request class needs a name of its own", name, j)
	}
	named[name] = i
	return nil
}

func compileRequest(r *contract.Request, field, baseDir string) (CompiledRequest, error) {
	var c CompiledRequest
	if r.GRPC != nil {
		return c, fieldErr(field+".grpc", "only a plan with protocol grpc makes gRPC calls")
	}
	if r.Method == "" {
		r.Method = "GET"
	}
	r.Method = strings.ToUpper(r.Method)
	if err := cmp.Or(check(field+".method", contract.Token.Check(r.Method)), check(field+".path", contract.URLPath.Check(r.Path))); err != nil {
		return c, err
	}
	c.Method = r.Method
	var err error
	if c.Path, err = ParseTemplate(r.Path); err != nil {
		return c, fieldErr(field+".path", "%v", err)
	}
	for name, value := range r.Headers {
		if err := check(field+".headers", contract.Token.Check(name)); err != nil {
			return c, err
		}
		if err := validHeader(name, value); err != nil {
			return c, fieldErr(field+".headers."+name, "%v", err)
		}
		t, err := ParseTemplate(value)
		if err != nil {
			return c, fieldErr(field+".headers."+name, "%v", err)
		}
		c.Headers = append(c.Headers, CompiledHeader{Name: name, Value: t})
	}
	if r.Body != nil && r.BodyFile != "" {
		return c, fieldErr(field, "give body or body_file, not both")
	}
	body := ""
	if r.Body != nil {
		body = *r.Body
	}
	if r.BodyFile != "" {
		path := r.BodyFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fieldErr(field+".body_file", "cannot read %q: %v", r.BodyFile, errors.Unwrap(err))
		}
		body = string(b)
	}
	if c.Body, err = ParseTemplate(body); err != nil {
		return c, fieldErr(field+".body", "%v", err)
	}
	return c, nil
}

// compileCall compiles a grpc plan's request: a method and a message, nothing of HTTP's.
func compileCall(r *contract.Request, field string) (CompiledRequest, error) {
	var c CompiledRequest
	if r.GRPC == nil {
		return c, fieldErr(field+".grpc", "is required when protocol is grpc: {\"method\": \"package.Service/Method\", \"message\": {…}}")
	}
	switch {
	case r.Method != "" || r.Path != "":
		return c, fieldErr(field, "a gRPC call has no method or path of HTTP's; name it in grpc.method")
	case r.Headers != nil:
		return c, fieldErr(field+".headers", "a gRPC call sends grpc.metadata instead")
	case r.Body != nil || r.BodyFile != "":
		return c, fieldErr(field, "a gRPC call sends grpc.message instead of a body")
	}
	g := r.GRPC
	if err := check(field+".grpc.method", contract.GRPCMethod.Check(g.Method)); err != nil {
		return c, err
	}
	msg := strings.TrimSpace(string(g.Message))
	if msg == "" || msg == "null" {
		msg = "{}"
	}
	if msg[0] != '{' {
		return c, fieldErr(field+".grpc.message", "must be a JSON object (the request message in protobuf's JSON mapping), got %.40s", msg)
	}
	call := &CompiledCall{Method: g.Method}
	var err error
	if call.Message, err = ParseTemplate(msg); err != nil {
		return c, fieldErr(field+".grpc.message", "%v", err)
	}
	for name, value := range g.Metadata {
		key := field + ".grpc.metadata." + name
		if name != strings.ToLower(name) || contract.Token.Check(name) != nil || strings.HasPrefix(name, "grpc-") || name == "te" || name == "content-type" {
			return c, fieldErr(key, "must be a lowercase header name of the caller's own (not grpc-*, te or content-type)")
		}
		if err := validHeader(name, value); err != nil {
			return c, fieldErr(key, "%v", err)
		}
		t, err := ParseTemplate(value)
		if err != nil {
			return c, fieldErr(key, "%v", err)
		}
		call.Metadata = append(call.Metadata, CompiledHeader{Name: name, Value: t})
	}
	c.GRPC = call
	return c, nil
}

// Compiled returns the parsed workload, in plan order.
func (p *Plan) Compiled() []CompiledRequest { return p.compiled }

// Pick chooses the index of a workload entry by weight, for a uniform u in [0, 1).
func (p *Plan) Pick(u float64) int {
	for i, w := range p.weights {
		if u < w {
			return i
		}
	}
	return len(p.weights) - 1
}

// Target returns the base URL of an arm.
func (p *Plan) Target(arm string) string {
	if arm == contract.Champion {
		return p.Targets.Champion
	}
	return p.Targets.Challenger
}

// SliceOrder realises the arm of every slice: alternate starts each pair with the champion;
// balanced flips a seeded coin per pair so that drift cannot favour one arm; abba starts every
// second pair with the challenger, so that each arm is measured first equally often.
func (p *Plan) SliceOrder() []string {
	rng := rand.New(rand.NewPCG(uint64(*p.Seed), 0x9e3779b97f4a7c15))
	order := make([]string, 0, 2*p.Pairs)
	for i := range p.Pairs {
		challengerFirst := false
		switch p.Order {
		case contract.OrderBalanced:
			challengerFirst = rng.IntN(2) == 1
		case contract.OrderABBA:
			challengerFirst = i%2 == 1
		}
		if challengerFirst {
			order = append(order, contract.Challenger, contract.Champion)
		} else {
			order = append(order, contract.Champion, contract.Challenger)
		}
	}
	return order
}

// Encode writes the plan, with its defaults filled, as indented JSON.
func (p *Plan) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// RatePerGeneratorCPU is the rate one event loop of the load generator holds with room to
// spare (bench/compare.sh: one loop on one core held every slice within 0.5% up to 25,000
// req/s, where the 2-core machine's service gave out for wrk2 too); above it the default
// adds loops (docs/design/0016-generator-cpu.md).
const RatePerGeneratorCPU = 20_000

// DefaultSendWindowUs is send_window_us when the plan leaves it out. A wake-up costs more CPU
// than everything else a request does (~25 µs on a VM), so from 4,000 req/s per lane each
// wake-up sends the ⌊rate × window⌋ + 1 requests due within the window; below, every request
// has a wake-up of its own and leaves on time. Measured (bench/compare.sh, 10k req/s): 0.029
// -> 0.022 CPU s per 1,000 requests, dispatch lag p50 ~40 -> ~150 µs. At 2k req/s a 1,000 µs
// window (wrk2's timer resolution) took about wrk2's CPU, with each request 0, 500 or 1,000 µs
// late (p50 700 µs against the same service, where wrk2 read 1,160 µs and the default 100).
const DefaultSendWindowUs = 250

// UsableCPUs is how many CPUs this process may run on: its affinity mask, which the host's
// --loadgen-cpus placement narrows (runtime.NumCPU reads the mask once, at start).
func UsableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		return set.Count()
	}
	return runtime.NumCPU()
}

// checkGeneratorCPUs: each event loop owns at least one connection per target, and has a
// CPU of its own among those the generator may use (the host's --loadgen-cpus).
func (p *Plan) checkGeneratorCPUs() error {
	if p.GeneratorCPUs > p.Connections {
		return fieldErr("generator_cpus", "must be at most connections (%d): each event loop owns at least one connection per target, got %d", p.Connections, p.GeneratorCPUs)
	}
	if cpus := p.cpus; p.GeneratorCPUs > cpus {
		return fieldErr("generator_cpus", "must be at most the %d CPUs the load generator may use here (the host's --loadgen-cpus placement or the machine), got %d", cpus, p.GeneratorCPUs)
	}
	return nil
}

// validHeader refuses what would break the request's framing: the generator writes
// Content-Length itself, and a CR or LF would end the header early.
func validHeader(name, value string) error {
	switch strings.ToLower(name) {
	case "content-length", "transfer-encoding":
		return fmt.Errorf("is computed by the load generator; leave it out")
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("must not contain CR, LF or NUL")
	}
	return nil
}

func validTarget(field, raw string) error {
	if raw == "" {
		return fieldErr(field, "is required (a base URL such as http://127.0.0.1:8001)")
	}
	u, err := url.Parse(raw)
	if err == nil && u.Scheme == "https" {
		// The generator's client is plain HTTP/1.1 on raw sockets; benchmark hosts
		// serve both arms on loopback, where TLS would only measure the TLS stack.
		return fieldErr(field, "https:// is not supported: the load generator speaks plain HTTP/1.1 (serve the arm on http://, e.g. behind the TLS terminator), got %q", raw)
	}
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fieldErr(field, "must be an http:// base URL, got %q", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fieldErr(field, "must be a base URL without query or fragment, got %q", raw)
	}
	return nil
}
