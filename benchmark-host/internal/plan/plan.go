// Package plan holds the load generator's experiment plan: what to send, to which two
// targets, at what rate, in which slice order. Parse validates everything up front so that a
// bad plan fails before any load is sent, with an error that names the field.
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Arm names, as they appear in plans and results.
const (
	Champion   = "champion"
	Challenger = "challenger"
)

// Orders a plan may ask for.
const (
	OrderAlternate = "alternate"
	OrderBalanced  = "balanced"
)

// MaxSafeSeed keeps seeds exact in JavaScript numbers, since the TypeScript side reads them.
const MaxSafeSeed = 1<<53 - 1

// Plan is the load generator's input document (see plan.schema.json).
type Plan struct {
	RunID         string            `json:"run_id,omitempty"`
	Workload      string            `json:"workload,omitempty"`
	Meta          map[string]string `json:"meta,omitempty"`
	Targets       Targets           `json:"targets"`
	Rate          float64           `json:"rate"`
	SliceSeconds  float64           `json:"slice_seconds"`
	Pairs         int               `json:"pairs"`
	Order         string            `json:"order,omitempty"`
	Seed          *int64            `json:"seed,omitempty"`
	WarmupSeconds float64           `json:"warmup_seconds"`
	SliceWarmupMs *int              `json:"slice_warmup_ms,omitempty"`
	Connections   int               `json:"connections,omitempty"`
	TimeoutMs     int               `json:"timeout_ms,omitempty"`
	MaxQueue      int               `json:"max_queue,omitempty"`
	Requests      []Request         `json:"requests"`

	// Compiled forms, filled by Validate.
	compiled []CompiledRequest
	weights  []float64 // cumulative, normalised to 1
}

// Targets are the two base URLs the run alternates between.
type Targets struct {
	Champion   string `json:"champion"`
	Challenger string `json:"challenger"`
}

// Request is one entry of the workload mix.
type Request struct {
	Method   string            `json:"method,omitempty"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     *string           `json:"body,omitempty"`
	BodyFile string            `json:"body_file,omitempty"`
	Weight   float64           `json:"weight,omitempty"`
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

// Parse decodes a plan, rejecting unknown fields, and validates it.
func Parse(r io.Reader, baseDir string) (*Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, describeDecodeError(err)
	}
	if dec.More() {
		return nil, errors.New("plan: trailing data after the JSON document")
	}
	if err := p.Validate(baseDir); err != nil {
		return nil, err
	}
	return &p, nil
}

func describeDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldErr(typeErr.Field, "expected %s, got a JSON %s", typeErr.Type, typeErr.Value)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fieldErr(strings.Trim(rest, `"`), "unknown field")
	}
	return fmt.Errorf("plan: not valid JSON: %w", err)
}

// Validate checks every field, fills defaults and compiles the workload.
func (p *Plan) Validate(baseDir string) error {
	if p.RunID == "" {
		p.RunID = "run"
	}
	if !validRunID(p.RunID) {
		return fieldErr("run_id", "must be 1-64 characters of [A-Za-z0-9._-], got %q", p.RunID)
	}
	if p.Workload == "" {
		p.Workload = "default"
	}
	if !validRunID(p.Workload) {
		return fieldErr("workload", "must be 1-64 characters of [A-Za-z0-9._-], got %q", p.Workload)
	}
	if len(p.Meta) > 32 {
		return fieldErr("meta", "must have at most 32 keys, got %d", len(p.Meta))
	}
	for k, v := range p.Meta {
		if !validRunID(k) || len(v) > 256 {
			return fieldErr("meta."+k, "keys are [A-Za-z0-9._-]{1,64} and values at most 256 characters")
		}
	}
	if err := validTarget("targets.champion", p.Targets.Champion); err != nil {
		return err
	}
	if err := validTarget("targets.challenger", p.Targets.Challenger); err != nil {
		return err
	}
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) || p.Rate > 1e6 {
		return fieldErr("rate", "must be a number of requests per second in (0, 1000000], got %v", p.Rate)
	}
	if !(p.SliceSeconds > 0) || p.SliceSeconds > 3600 {
		return fieldErr("slice_seconds", "must be in (0, 3600], got %v", p.SliceSeconds)
	}
	if p.Pairs < 1 || p.Pairs > 10000 {
		return fieldErr("pairs", "must be an integer in [1, 10000], got %d", p.Pairs)
	}
	switch p.Order {
	case "":
		p.Order = OrderAlternate
	case OrderAlternate, OrderBalanced:
	default:
		return fieldErr("order", "must be %q or %q, got %q", OrderAlternate, OrderBalanced, p.Order)
	}
	if p.Seed == nil {
		s := rand.Int64N(MaxSafeSeed)
		p.Seed = &s
	} else if *p.Seed < 0 || *p.Seed > MaxSafeSeed {
		return fieldErr("seed", "must be an integer in [0, 2^53-1], got %d", *p.Seed)
	}
	if p.WarmupSeconds < 0 || p.WarmupSeconds > 3600 {
		return fieldErr("warmup_seconds", "must be in [0, 3600], got %v", p.WarmupSeconds)
	}
	if p.SliceWarmupMs == nil {
		d := 200
		p.SliceWarmupMs = &d
	}
	if *p.SliceWarmupMs < 0 || float64(*p.SliceWarmupMs) >= p.SliceSeconds*1000 {
		return fieldErr("slice_warmup_ms", "must be in [0, slice_seconds*1000), got %d", *p.SliceWarmupMs)
	}
	if p.Connections == 0 {
		p.Connections = 10
	}
	if p.Connections < 1 || p.Connections > 1000 {
		return fieldErr("connections", "must be an integer in [1, 1000], got %d", p.Connections)
	}
	if p.TimeoutMs == 0 {
		p.TimeoutMs = 2000
	}
	if p.TimeoutMs < 1 || p.TimeoutMs > 60000 {
		return fieldErr("timeout_ms", "must be an integer in [1, 60000], got %d", p.TimeoutMs)
	}
	if p.MaxQueue == 0 {
		// Anything queued longer than a timeout's worth of schedule is already lost.
		p.MaxQueue = max(64, int(math.Ceil(p.Rate*float64(p.TimeoutMs)/1000)))
	}
	if p.MaxQueue < 1 || p.MaxQueue > 10_000_000 {
		return fieldErr("max_queue", "must be an integer in [1, 10000000], got %d", p.MaxQueue)
	}
	return p.compileRequests(baseDir)
}

func (p *Plan) compileRequests(baseDir string) error {
	if len(p.Requests) == 0 {
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
		if r.Weight < 0 || math.IsInf(r.Weight, 0) {
			return fieldErr(field+".weight", "must be a positive number, got %v", r.Weight)
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

func compileRequest(r *Request, field, baseDir string) (CompiledRequest, error) {
	var c CompiledRequest
	if r.Method == "" {
		r.Method = "GET"
	}
	r.Method = strings.ToUpper(r.Method)
	if !isToken(r.Method) {
		return c, fieldErr(field+".method", "must be an HTTP method token, got %q", r.Method)
	}
	c.Method = r.Method
	if !strings.HasPrefix(r.Path, "/") {
		return c, fieldErr(field+".path", "must start with /, got %q", r.Path)
	}
	var err error
	if c.Path, err = ParseTemplate(r.Path); err != nil {
		return c, fieldErr(field+".path", "%v", err)
	}
	for name, value := range r.Headers {
		if !isToken(name) {
			return c, fieldErr(field+".headers", "header name %q is not an HTTP token", name)
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
	if arm == Champion {
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
		if p.Order == OrderBalanced && rng.IntN(2) == 1 {
			order = append(order, Challenger, Champion)
		} else {
			order = append(order, Champion, Challenger)
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

func validTarget(field, raw string) error {
	if raw == "" {
		return fieldErr(field, "is required (a base URL such as http://127.0.0.1:8001)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr(field, "must be an http:// or https:// base URL, got %q", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fieldErr(field, "must be a base URL without query or fragment, got %q", raw)
	}
	return nil
}

func validRunID(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != "." && s != ".."
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}
