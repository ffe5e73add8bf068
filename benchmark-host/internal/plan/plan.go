// Package plan compiles the load generator's plan (contract.Plan): what to send, to which two
// targets, at what rate, in which slice order. Compile validates everything against the
// contract's limits up front, so that a bad plan fails before any load is sent, with an error
// that names the field.
package plan

import (
	"cmp"
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

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Plan is a validated plan (contract.Plan, the load generator's input) with its workload
// compiled: templates parsed, body files read, weights normalised.
type Plan struct {
	contract.Plan

	compiled []CompiledRequest
	weights  []float64 // cumulative, normalised to 1
}

// CompiledRequest is a Request with its templates parsed and its body file read.
type CompiledRequest struct {
	Method  string
	Path    Template
	Headers []CompiledHeader
	Body    Template
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
	return Parse(f, filepath.Dir(path))
}

// Parse decodes a plan strictly and compiles it.
func Parse(r io.Reader, baseDir string) (*Plan, error) {
	var p contract.Plan
	if err := contract.Decode(r, &p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return Compile(p, baseDir)
}

// Compile validates a plan against the contract's limits, fills its defaults (the schema's
// `default`s) and compiles its workload. body_file paths are relative to baseDir.
func Compile(cp contract.Plan, baseDir string) (*Plan, error) {
	p := &Plan{Plan: cp}
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
	if p.Seed == nil {
		s := rand.Int64N(int64(contract.Seed.Max))
		p.Seed = &s
	}
	if p.SliceWarmupMs == nil {
		d := 200
		p.SliceWarmupMs = &d
	}
	if p.Connections == 0 {
		p.Connections = 10
	}
	if p.TimeoutMs == 0 {
		p.TimeoutMs = 2000
	}
	if p.GeneratorCPUs == 0 {
		p.GeneratorCPUs = max(1, min(int(math.Ceil(p.Rate/RatePerGeneratorCPU)), runtime.NumCPU(), p.Connections))
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
		p.checkGeneratorCPUs(),
		check("timeout_ms", contract.TimeoutMs.Check(float64(p.TimeoutMs))),
		check("max_queue", contract.MaxQueue.Check(float64(p.MaxQueue))),
	)
}

func (p *Plan) compileRequests(baseDir string) error {
	if len(p.Requests) < contract.AtLeastOne.Min {
		return fieldErr("requests", "must list at least one request")
	}
	total := 0.0
	p.compiled = make([]CompiledRequest, len(p.Requests))
	for i := range p.Requests {
		r := &p.Requests[i]
		field := fmt.Sprintf("requests[%d]", i)
		c, err := compileRequest(r, field, baseDir)
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

func compileRequest(r *contract.Request, field, baseDir string) (CompiledRequest, error) {
	var c CompiledRequest
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
// balanced flips a seeded coin per pair so that drift cannot favour one arm.
func (p *Plan) SliceOrder() []string {
	rng := rand.New(rand.NewPCG(uint64(*p.Seed), 0x9e3779b97f4a7c15))
	order := make([]string, 0, 2*p.Pairs)
	for range p.Pairs {
		if p.Order == contract.OrderBalanced && rng.IntN(2) == 1 {
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
// adds loops (issue 17).
const RatePerGeneratorCPU = 20_000

// checkGeneratorCPUs: each event loop owns at least one connection per target.
func (p *Plan) checkGeneratorCPUs() error {
	if p.GeneratorCPUs > p.Connections {
		return fieldErr("generator_cpus", "must be at most connections (%d): each event loop owns at least one connection per target, got %d", p.Connections, p.GeneratorCPUs)
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
		// The generator's client is plain HTTP/1.1 on raw sockets (issue 17); benchmark hosts
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
