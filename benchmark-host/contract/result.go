package contract

import "time"

// SchemaVersion of the result. Change it with any change a reader of an older version would
// misread.
const SchemaVersion = 1

// Result is one interleaved experiment, as the load generator writes it.
type Result struct {
	SchemaVersion int    `json:"schema_version" limit:"schema_version"`
	Generator     string `json:"generator"`
	// The plan with its defaults filled.
	Plan Plan `json:"plan"`
	// The seed the run used (the plan's, or the one drawn for it).
	Seed int64 `json:"seed" limit:"seed"`
	// The arm of every slice, in order.
	Order   []string  `json:"order" limit:"arm"`
	Host    HostInfo  `json:"host"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// The run stopped before its last slice.
	Partial       bool    `json:"partial"`
	PartialReason string  `json:"partial_reason,omitempty"`
	Warmup        Warmup  `json:"warmup"`
	Slices        []Slice `json:"slices"`
}

// HostInfo fingerprints the machine a result was measured on, so that results of differently
// configured hosts are never silently compared.
type HostInfo struct {
	Hostname   string     `json:"hostname"`
	GoVersion  string     `json:"go_version"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	NumCPU     int        `json:"num_cpu"`
	CPUModel   string     `json:"cpu_model"`
	Kernel     string     `json:"kernel"`
	LoadAvg    [3]float64 `json:"load_avg"`
	// Where readable.
	Governor   string `json:"cpu_governor,omitempty"`
	MaxFreqKHz int64  `json:"cpu_max_freq_khz,omitempty"`
	// Whether the run held every CPU out of deep idle states (PM QoS cpu_dma_latency 0, perf-host
	// --hold-cpus-awake, loadgen -hold-cpus-awake): "not asked", "held", or "not held: " and why.
	CPUIdle string `json:"cpu_idle"`
	// The CPU slice the generator's threads ran with: "0.1 ms" when the kernel granted the short
	// slice it asked for, so that its sends preempt a service (Linux 6.12+), else "default: " and
	// why. Absent from the results of generators older than the field.
	GeneratorSlice string `json:"generator_slice,omitempty"`
}

// Warmup summarises the unrecorded load sent before the first slice.
type Warmup struct {
	Seconds  float64 `json:"seconds" limit:"amount"`
	Sent     int64   `json:"sent" limit:"count"`
	OK       int64   `json:"ok" limit:"count"`
	Errors   int64   `json:"errors" limit:"count"`
	Overflow int64   `json:"overflow" limit:"count"`
}

// Slice is one contiguous window of load against one arm.
type Slice struct {
	Index int       `json:"index" limit:"count"`
	Pair  int       `json:"pair" limit:"count"`
	Arm   string    `json:"arm" limit:"arm"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Requests due on the schedule in the slice, sent, answered or failed, answered 2xx/3xx.
	Scheduled int64 `json:"scheduled" limit:"count"`
	Sent      int64 `json:"sent" limit:"count"`
	Completed int64 `json:"completed" limit:"count"`
	OK        int64 `json:"ok" limit:"count"`
	// Requests in the latency histogram (past the slice's warm-up).
	Recorded int64       `json:"recorded" limit:"count"`
	Errors   ErrorCounts `json:"errors"`
	// Requests that found the queue full, or were still unsent timeout_ms past the slice's end
	// (a service or generator hopelessly behind), and were not sent; the slice is then invalid.
	Overflow       int64 `json:"overflow" limit:"count"`
	NewConnections int64 `json:"new_connections" limit:"count"`
	// Requests the generator dispatched inside the slice's window (sent, or queued for a free
	// connection), per second: the pace it kept to its schedule.
	AchievedRPS float64 `json:"achieved_rps" limit:"amount"`
	OKRPS       float64 `json:"ok_rps" limit:"amount"`
	// Completion − intended send: free of coordinated omission.
	LatencyUs Latency `json:"latency_us"`
	// Completion − actual send.
	ServiceTimeUs Quantiles2 `json:"service_time_us"`
	// Dispatch − intended send: how far the generator fell behind its own schedule. A slice
	// where it fell behind measured the generator (the verdict drops its pair,
	// docs/design/0011-instrument-vouches-for-itself.md). At the same percentiles as the latency:
	// the verdict reads the lag at its own percentile, since a stall moves a slice's pNN only when
	// it delayed more than (100-NN)% of its requests.
	DispatchLagUs Latency `json:"dispatch_lag_us"`
	// Actual − dispatch send: how long requests waited for a free connection of their arm, the
	// service's doing (all its connections busy); part of the latency.
	ConnectionWaitUs Quantiles2 `json:"connection_wait_us"`
	// Corrected latency in µs, HdrHistogram compressed base64 V2.
	Histogram string `json:"histogram"`
	// The named percentiles the slice recorded too few requests for (see SampleBudget).
	ShortOfBudget []string `json:"short_of_budget"`
	// Each request class's share of the slice, one per entry of the plan's requests, in order
	// (docs/design/0020-request-classes.md): its counts add up to the slice's. Absent for a
	// workload of one entry (the slice is its class) or of more than MaxClasses.
	Classes []ClassSlice `json:"classes,omitempty"`
	// What the measured arm's processes used during the slice, filled by perf-host from the
	// arm's cgroup (the host result's resource_accounting says from where); absent from the load
	// generator alone, or when it could not be read. CPU µs per completed request:
	ServiceCPUUsPerRequest *float64 `json:"service_cpu_us_per_request,omitempty" limit:"amount"`
	// Average CPU cores busy over the slice.
	ServiceCPUCores *float64 `json:"service_cpu_cores,omitempty" limit:"amount"`
	// Memory at the slice's end: memory.current, else the sum of the processes' RSS.
	ServiceRSSBytes *int64 `json:"service_rss_bytes,omitempty" limit:"count"`
	// CPU cores the other arm, not measured, used meanwhile; past the host's
	// --max-idle-arm-cores the slice is invalid.
	IdleArmCPUCores *float64 `json:"idle_arm_cpu_cores,omitempty" limit:"amount"`
	// The generator's own CPU over the slice's window, from the process CPU clock: average
	// cores busy, and CPU µs per request sent.
	// Connections the measured arm held during the slice (seen at its start or end boundary,
	// from the server side: the arm's accepted sockets and who holds their other end) that the
	// load generator did not open, and who opened them ("user perf-gate-challenger (uid 998): 12").
	// A slice where an arm was reached by anyone else is disturbed (host_disturbance says so).
	ForeignConnections       int64    `json:"foreign_connections,omitempty" limit:"count"`
	ForeignPeers             []string `json:"foreign_peers,omitempty"`
	GeneratorCPUCores        float64  `json:"generator_cpu_cores,omitempty" limit:"amount"`
	GeneratorCPUUsPerRequest float64  `json:"generator_cpu_us_per_request,omitempty" limit:"amount"`
	// CPU cores the host spent during the slice on anything but this run's arms and load
	// generator (its busy and stolen CPU time less theirs), filled by perf-host.
	ForeignCPUCores *float64 `json:"foreign_cpu_cores,omitempty" limit:"amount"`
	// Why the host could not vouch for the slice although the load generator kept its
	// schedule: foreign load past --max-foreign-cores. The verdict drops its pair as it drops
	// one where the generator fell behind, and most pairs disturbed is "could not measure".
	HostDisturbance string `json:"host_disturbance,omitempty"`
	Valid           bool   `json:"valid"`
	InvalidReason   string `json:"invalid_reason,omitempty"`
}

// MaxClasses is the most request classes a slice records one by one: each is a latency
// histogram per slice, and a mix of more entries is a workload to split.
const MaxClasses = 16

// ClassSlice is one request class's share of a slice: the requests drawn from one entry of
// the plan's requests, counted and recorded as the slice is.
type ClassSlice struct {
	// Requests answered or failed, answered 2xx/3xx, and in the latency histogram.
	Completed int64       `json:"completed" limit:"count"`
	OK        int64       `json:"ok" limit:"count"`
	Recorded  int64       `json:"recorded" limit:"count"`
	Errors    ErrorCounts `json:"errors"`
	LatencyUs Latency     `json:"latency_us"`
	// Corrected latency in µs, HdrHistogram compressed base64 V2.
	Histogram string `json:"histogram"`
	// The named percentiles the class recorded too few requests for in this slice.
	ShortOfBudget []string `json:"short_of_budget"`
}

// ErrorCounts counts failed requests by class.
type ErrorCounts struct {
	Connect int64 `json:"connect" limit:"count"`
	Timeout int64 `json:"timeout" limit:"count"`
	Status4 int64 `json:"4xx" limit:"count"`
	Status5 int64 `json:"5xx" limit:"count"`
	Other   int64 `json:"other" limit:"count"`
	// gRPC calls answered with a status other than OK, by its name in snake case
	// (unavailable, resource_exhausted, …); a call past timeout_ms is a timeout, and a
	// connection that could not be made is connect.
	GRPC map[string]int64 `json:"grpc,omitempty" limit:"count"`
}

// Total is the number of failed requests of any class.
func (e ErrorCounts) Total() int64 {
	n := e.Connect + e.Timeout + e.Status4 + e.Status5 + e.Other
	for _, c := range e.GRPC {
		n += c
	}
	return n
}

// Latency is a slice's corrected latency at its named percentiles, in µs.
type Latency struct {
	P50  int64 `json:"p50" limit:"count"`
	P90  int64 `json:"p90" limit:"count"`
	P99  int64 `json:"p99" limit:"count"`
	P999 int64 `json:"p999" limit:"count"`
	Max  int64 `json:"max" limit:"count"`
}

// Quantiles2 is a median and a p99, in µs.
type Quantiles2 struct {
	P50 int64 `json:"p50" limit:"count"`
	P99 int64 `json:"p99" limit:"count"`
}

// Run statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusAborted = "aborted"
)

// Outcome is how a run ended: the last line of `wait` (after OutcomeMarker) and outcome.json.
type Outcome struct {
	RunID string `json:"run_id"`
	// Left out when the run died before its kind was read.
	Kind   string `json:"kind,omitempty" limit:"kind"`
	Status string `json:"status" limit:"run_status"`
	// Why it failed, when it did; a failure of one arm names the arm (challenger_crashed).
	ErrorKind ErrorKind `json:"error_kind,omitempty" limit:"error_kind"`
	Message   string    `json:"message,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
}

// OutcomeMarker starts the last line `wait` prints; the outcome as JSON follows it.
const OutcomeMarker = "perf-gate-outcome "

// Finding statuses: a refusal stops the run; a flag is recorded for the verdict to weigh.
const (
	FindingOK     = "ok"
	FindingFlag   = "flag"
	FindingRefuse = "refuse"
)

// Finding is one pre-flight check's result.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status" limit:"finding_status"`
	Detail string `json:"detail"`
}

// FindingsWith lists "check: detail" of the findings of one status, in their order.
func FindingsWith(findings []Finding, status string) []string {
	var out []string
	for _, f := range findings {
		if f.Status == status {
			out = append(out, f.Check+": "+f.Detail)
		}
	}
	return out
}

// HostResult is what `perf-host result` prints for a run that sent load: the load generator's
// result, how the run ended and the pre-flight findings. (A run that ended before any load
// has no result; `result` then prints only {"outcome": …}.)
type HostResult struct {
	Result
	Outcome   Outcome   `json:"outcome"`
	Preflight []Finding `json:"preflight"`
	// How the arms were isolated and placed during the run.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Per arm, where the slices' service_* fields come from.
	ResourceAccounting map[string]ResourceAccounting `json:"resource_accounting,omitempty"`
	// How each arm started for the run (champion and challenger, the same way) and what it
	// left on disk.
	Arms map[string]ArmStart `json:"arms,omitempty"`
	// What the run measured: only runs of one identity are pooled.
	Identity *Identity `json:"identity,omitempty"`
	// Both arms' CPU stacks, sampled in their own slices, when the run request asked for them.
	Profiles *Profiles `json:"profiles,omitempty"`
}

// Profile statuses.
const (
	ProfilesRecorded     = "recorded"
	ProfilesNotAvailable = "not_available"
)

// Profiles is what a run's CPU sampling found (docs/design/0021-profiles.md): each arm's
// profile (a pprof file `perf-host profile RUN-ID ARM` prints), and per slice the samples of the
// functions that carry most of either arm's CPU, for the client to tell which functions' CPU per
// request moved and by how much more than their noise.
type Profiles struct {
	// recorded, or not_available with the reason (no perf on the host, no permission, no cgroup
	// per arm); the run and its verdict are the same either way.
	Status string `json:"status" limit:"profile_status"`
	Reason string `json:"reason,omitempty"`
	// The sampler: perf's event, cpu-clock, at this rate per CPU while an arm runs there.
	Event       string `json:"event,omitempty"`
	FrequencyHz int    `json:"frequency_hz,omitempty" limit:"count"`
	// The CPU perf itself used over the run, which the host counts as neither arm's (nor as
	// foreign load): reading the kernel's sample buffers and writing them.
	CPUSeconds float64 `json:"cpu_seconds,omitempty" limit:"amount"`
	// Each arm's profile: its file, size and samples (only those in the arm's own slices).
	Arms map[string]ProfileFile `json:"arms,omitempty"`
	// The functions the slices count, by index: those past a small share of either arm's samples.
	Functions []string `json:"functions,omitempty"`
	// For each function, the functions above it on the stack in nearly all (99%) of its samples,
	// by index: what calls it, up to the root.
	Callers [][]int `json:"callers,omitempty"`
	// Per measured slice, the samples of the arm it measured.
	Slices []ProfileSlice `json:"slices,omitempty"`
}

// ProfileFile is one arm's pprof profile, gzipped.
type ProfileFile struct {
	File    string `json:"file"`
	Bytes   int64  `json:"bytes" limit:"count"`
	Samples int64  `json:"samples" limit:"count"`
}

// ProfileSlice is one slice's samples of the arm it measured.
type ProfileSlice struct {
	Index   int   `json:"index" limit:"count"`
	Samples int64 `json:"samples" limit:"count"`
	// [function index, samples with the function anywhere on the stack, samples with it on top],
	// for the functions with any.
	Functions [][3]int64 `json:"functions"`
}

// ArmStart is how one arm started for a run: a new process in a fresh copy of its build.
type ArmStart struct {
	SHA string `json:"sha" limit:"sha"`
	// PORT and each PORT_<NAME>, as the service got them.
	Ports    map[string]int `json:"ports"`
	StateDir string         `json:"state_dir"`
	State    string         `json:"state" limit:"state"`
	// How long service.setup ran; absent without one.
	SetupSeconds *float64  `json:"setup_seconds,omitempty" limit:"amount"`
	Started      time.Time `json:"started"`
	// From the start to the first healthy answer.
	HealthySeconds float64 `json:"healthy_seconds" limit:"amount"`
	// Bytes on disk of the working copy and of STATE_DIR when the arm stopped; absent when
	// they could not be measured.
	WorkBytes  *int64 `json:"work_bytes,omitempty" limit:"count"`
	StateBytes *int64 `json:"state_bytes,omitempty" limit:"count"`
	// The arm's log for the run: the bytes cut from its middle past the host's
	// --max-arm-log-bytes, and its last lines, which a report shows when the run could not
	// measure.
	LogCutBytes int64  `json:"log_cut_bytes,omitempty" limit:"count"`
	LogTail     string `json:"log_tail,omitempty"`
	// Each of service.dependencies, in order; absent without any.
	Dependencies []DependencyStart `json:"dependencies,omitempty"`
}
