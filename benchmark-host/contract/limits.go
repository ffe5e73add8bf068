package contract

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Range is the interval a number must lie in. Max may be +Inf: no upper bound.
type Range struct {
	Min, Max                   float64
	MinExclusive, MaxExclusive bool
}

// Contains reports whether v lies in the range (NaN never does).
func (r Range) Contains(v float64) bool {
	if math.IsNaN(v) || v > r.Max || v < r.Min || (r.MinExclusive && v == r.Min) || (r.MaxExclusive && v == r.Max) {
		return false
	}
	return !math.IsInf(v, 0)
}

// Check says what is wrong with v, for an error that the caller prefixes with the field.
func (r Range) Check(v float64) error {
	if r.Contains(v) {
		return nil
	}
	return fmt.Errorf("must be %s, got %s", r, number(v))
}

// String is the range as a sentence fragment: "in (0, 3600]", "at least 2", "positive".
func (r Range) String() string {
	open, closing := "[", "]"
	if r.MinExclusive {
		open = "("
	}
	if r.MaxExclusive {
		closing = ")"
	}
	switch {
	case !math.IsInf(r.Max, 1):
		return fmt.Sprintf("in %s%s, %s%s", open, number(r.Min), number(r.Max), closing)
	case r.MinExclusive && r.Min == 0:
		return "positive"
	case r.MinExclusive:
		return "more than " + number(r.Min)
	}
	return "at least " + number(r.Min)
}

// number prints a limit or a value the way a user wrote it: 1000000, not 1e+06.
func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Pattern is a regular expression that means the same in Go (RE2) and in JavaScript (the
// schema's `pattern`, which zod checks), so it may use neither lookaround nor backreferences.
type Pattern struct {
	Expr string
	// Want is the expected form in words, for error messages.
	Want string
	re   *regexp.Regexp
}

func pattern(expr, want string) Pattern {
	return Pattern{Expr: expr, Want: want, re: regexp.MustCompile(expr)}
}

// MatchString reports whether s has the form.
func (p Pattern) MatchString(s string) bool { return p.re.MatchString(s) }

// Check says what is wrong with s.
func (p Pattern) Check(s string) error {
	if p.re.MatchString(s) {
		return nil
	}
	return fmt.Errorf("must be %s, got %q", p.Want, s)
}

// Enum is the closed set of values a string may take.
type Enum []string

// Check says what is wrong with s.
func (e Enum) Check(s string) error {
	for _, v := range e {
		if s == v {
			return nil
		}
	}
	quoted := make([]string, len(e))
	for i, v := range e {
		quoted[i] = strconv.Quote(v)
	}
	return fmt.Errorf("must be %s, got %q", strings.Join(quoted, " or "), s)
}

// Items bounds the length of a list; a Max of 0 is no bound.
type Items struct{ Min, Max int }

// Check says what is wrong with a list of n items.
func (l Items) Check(n int) error {
	switch {
	case n < l.Min:
		return fmt.Errorf("at least %d, got %d", l.Min, n)
	case l.Max > 0 && n > l.Max:
		return fmt.Errorf("at most %d, got %d", l.Max, n)
	}
	return nil
}

// Names bounds a list of names: how many, and the form of each.
type Names struct {
	Max  int
	Item Pattern
}

// Check says what is wrong with the list; the caller prefixes the field.
func (n Names) Check(list []string) error {
	if len(list) > n.Max {
		return fmt.Errorf("at most %d names, got %d", n.Max, len(list))
	}
	seen := map[string]bool{}
	for i, s := range list {
		if err := n.Item.Check(s); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		if seen[s] {
			return fmt.Errorf("[%d]: %q is named twice", i, s)
		}
		seen[s] = true
	}
	return nil
}

// Const is the one value a field may take.
type Const struct{ Value any }

// The limits. A message field names its limit in a `limit:"…"` tag; validation calls the
// same value's Check, and the schema generator writes it into the JSON Schema.
var (
	// Name is a workload's name and a plan's run id: safe in paths, keys and reports.
	Name = pattern(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, "1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit")
	// RunID is a run's id in an SSH command: lowercase, so it reads the same everywhere.
	RunID = pattern(`^[a-z0-9][a-z0-9-]{2,63}$`, "3-64 characters of a-z 0-9 -, starting with a letter or digit")
	// SHA names a build: a commit SHA, or a content digest for local builds.
	SHA = pattern(`^[0-9a-f]{7,40}$`, "7-40 lowercase hex characters")
	// ClassName names a request class (requests[].name): safe in a Markdown table cell and a
	// code span, and long enough for "POST /orders/{id}".
	ClassName = pattern(`^[A-Za-z0-9/][A-Za-z0-9 ._/:{}-]{0,63}$`, "1-64 characters of A-Z a-z 0-9 space . _ / : { } -, starting with a letter, digit or /")
	// Token is an HTTP token (RFC 9110): a method, a header name.
	Token = pattern("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", "an HTTP token such as GET or Content-Type")
	// GRPCMethod is a full gRPC method name.
	GRPCMethod = pattern(`^[A-Za-z_][A-Za-z0-9_.]*\.[A-Za-z_][A-Za-z0-9_]*/[A-Za-z_][A-Za-z0-9_]*$`, "package.Service/Method")
	// URLPath is a request path or a health path.
	URLPath = pattern(`^/[^\x00-\x1f\x7f]*$`, "a path starting with /, without control characters (a CR or LF would end the request line)")
	// EnvName is an environment variable's name, as a shell would take it.
	EnvName = pattern(`^[A-Za-z_][A-Za-z0-9_]*$`, "a variable name: letters, digits and _, not starting with a digit")
	// PortNames are a service's extra ports (service.ports), each the variable PORT_<NAME>.
	PortNames = Names{Max: 8, Item: PortName}
	// PortName is one of them, and a dependency's name: the variable PORT_<NAME>.
	PortName = pattern(`^[a-z][a-z0-9_]{0,15}$`, "a lowercase name such as peer, admin or redis (a-z, 0-9, _; at most 16, starting with a letter)")

	// Rate is requests per second over the whole run, whichever arm is in its slice.
	Rate          = Range{Min: 0, Max: 1_000_000, MinExclusive: true}
	SliceSeconds  = Range{Min: 0, Max: 3600, MinExclusive: true}
	Pairs         = Range{Min: 1, Max: 10_000}
	WarmupSeconds = Range{Min: 0, Max: 3600}
	// SliceWarmupMs is further bounded by the slice itself (less than slice_seconds × 1000).
	SliceWarmupMs = Range{Min: 0, Max: 3_600_000}
	Connections   = Range{Min: 1, Max: 1000}
	GeneratorCPUs = Range{Min: 1, Max: 64}
	// SendWindowUs: wrk2's timer resolution is 1 ms; past that the window is all lateness.
	SendWindowUs = Range{Min: 0, Max: 1000}
	TimeoutMs    = Range{Min: 1, Max: 60_000}
	MaxQueue     = Range{Min: 1, Max: 10_000_000}
	Weight       = Range{Min: 0, Max: math.Inf(1), MinExclusive: true}
	// Seed stays exact in JavaScript numbers, since the TypeScript side reads it.
	Seed = Range{Min: 0, Max: 1<<53 - 1}

	HealthTimeoutSeconds = Range{Min: 0, Max: 600, MinExclusive: true}
	// SetupTimeoutSeconds bounds service.setup: loading a fixture may take a while, but not an hour.
	SetupTimeoutSeconds = Range{Min: 0, Max: 1800, MinExclusive: true}
	// ReadyTimeoutSeconds bounds the wait for each dependency of a service.
	ReadyTimeoutSeconds = Range{Min: 0, Max: 600, MinExclusive: true}

	// Percentile is a latency percentile: the SLO's, and the one a floor was measured at.
	Percentile = Range{Min: 0, Max: 100, MinExclusive: true, MaxExclusive: true}

	// PullRequest is a pull request's number.
	PullRequest = Range{Min: 1, Max: 999_999_999}
	// URL is a link a report gives (a workflow run): no spaces, so it cannot break a line or an attribute.
	URL = pattern(`^https?://[^\s"'<>]{1,1000}$`, "an http(s) URL of at most 1,000 characters, without spaces or quotes")
	// SHA256 is a SHA-256 in hex (a run's identity).
	SHA256 = pattern(`^[0-9a-f]{64}$`, "64 lowercase hex characters (a SHA-256)")
	// Ms is a difference in latency: challenger minus champion, or an interval's end.
	Ms = Range{Min: -1e6, Max: 1e6}
	// LevelMs is an arm's latency at a percentile: positive, since percents are of it.
	LevelMs = Range{Min: 0, Max: 1e6, MinExclusive: true}
	// PercentChange is a change in percent of what it changed from: no less than -100.
	PercentChange = Range{Min: -100, Max: 1e6}
	// BudgetPercent is the monthly regression budget, in percent of main's level.
	BudgetPercent = Range{Min: 0, Max: 100, MinExclusive: true}
	// Comparisons: one per workload and rate of a gate.
	Comparisons = Items{Min: 1, Max: 256}
	// RunIDs are the runs a verdict rests on (a gate's, its extensions and the reruns it pooled).
	RunIDs = Names{Max: 1024, Item: RunID}

	// FloorPairs: an interval needs at least two paired differences.
	FloorPairs  = Range{Min: 2, Max: 10_000}
	HalfWidthMs = Range{Min: 0, Max: 1e6}

	// Count is anything counted; Amount anything measured that cannot be negative.
	Count  = Range{Min: 0, Max: math.Inf(1)}
	Amount = Range{Min: 0, Max: math.Inf(1)}

	Orders          = Enum{OrderAlternate, OrderBalanced, OrderABBA}
	Protocols       = Enum{ProtocolHTTP1, ProtocolH2C, ProtocolGRPC}
	HealthChecks    = Enum{HealthHTTP, HealthGRPC}
	Arms            = Enum{Champion, Challenger}
	Kinds           = Enum{KindAB, KindAA}
	Bases           = Enum{BaseChampion, BaseMergeBase, BaseAncestor}
	RunStatuses     = Enum{StatusOK, StatusError, StatusAborted}
	FindingStatuses = Enum{FindingOK, FindingFlag, FindingRefuse}
	CgroupModes     = Enum{CgroupControllers, CgroupCore, CgroupNone}
	PlacementMethod = Enum{"cpuset", "sched_setaffinity", "none"}
	MaxProcsBy      = Enum{"pids.max", "RLIMIT_NPROC", "none"}
	States          = Enum{StateFresh, StatePersistent}
	Verdicts        = Enum{VerdictGreen, VerdictRed, VerdictGrey}
	BlockReasons    = Enum{BlockedByLatency, BlockedByErrors, BlockedByCPU, BlockedByBudget}
	HistoryKinds    = Enum{HistoryGate, HistoryPromotion, HistoryRollback, HistoryCalibration, HistoryDrift}
	BudgetBases     = Enum{BudgetBasisDrift, BudgetBasisSteps}
	ProfileStatuses = Enum{ProfilesRecorded, ProfilesNotAvailable}

	AtLeastOne = Items{Min: 1}
	// Dependencies: a few services beside the one under test, each started in both arms.
	Dependencies = Items{Max: 4}

	ResultSchemaVersion = Const{Value: SchemaVersion}
	HistoryVersion      = Const{Value: HistorySchemaVersion}
)

// Limits maps the name in a field's `limit` tag to its limit, for the schema generator.
var Limits = map[string]any{
	"name": Name, "class_name": ClassName, "run_id": RunID, "sha": SHA, "token": Token, "url_path": URLPath,
	"rate": Rate, "slice_seconds": SliceSeconds, "pairs": Pairs, "warmup_seconds": WarmupSeconds,
	"slice_warmup_ms": SliceWarmupMs, "connections": Connections, "generator_cpus": GeneratorCPUs, "send_window_us": SendWindowUs, "timeout_ms": TimeoutMs,
	"max_queue": MaxQueue, "weight": Weight, "seed": Seed,
	"health_timeout_seconds": HealthTimeoutSeconds, "setup_timeout_seconds": SetupTimeoutSeconds,
	"port_names": PortNames, "port_name": PortName, "env_name": EnvName, "state": States,
	"dependencies": Dependencies, "ready_timeout_seconds": ReadyTimeoutSeconds,
	"floor_pairs": FloorPairs, "half_width_ms": HalfWidthMs, "percentile": Percentile,
	"count": Count, "amount": Amount,
	"order": Orders, "protocol": Protocols, "health_check": HealthChecks, "grpc_method": GRPCMethod, "arm": Arms, "kind": Kinds, "base": Bases, "run_status": RunStatuses, "error_kind": ErrorKinds, "finding_status": FindingStatuses,
	"cgroup_mode": CgroupModes, "profile_status": ProfileStatuses, "placement_method": PlacementMethod, "max_procs_by": MaxProcsBy,
	"at_least_one":   AtLeastOne,
	"schema_version": ResultSchemaVersion,
	"pull_request":   PullRequest, "url": URL, "digest": SHA256, "ms": Ms, "level_ms": LevelMs, "percent_change": PercentChange,
	"budget_percent": BudgetPercent, "comparisons": Comparisons, "run_ids": RunIDs, "verdict": Verdicts, "blocked_by": BlockReasons,
	"history_kind": HistoryKinds, "budget_basis": BudgetBases, "history_schema_version": HistoryVersion,
}
