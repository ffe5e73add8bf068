package contract

import "encoding/json"

// Arms, as plans and results name them.
const (
	Champion   = "champion"
	Challenger = "challenger"
)

// Orders a plan may ask for.
const (
	// OrderAlternate measures the champion first in every pair.
	OrderAlternate = "alternate"
	// OrderBalanced flips a seeded coin per pair, so drift cannot favour one arm.
	OrderBalanced = "balanced"
	// OrderABBA measures the champion first in odd pairs and the challenger first in even
	// ones (AB BA AB BA …): over every two pairs each arm is first once, so an advantage of the
	// first (or second) slice of a pair, and a linear drift, cancel exactly
	// (docs/design/0012-slice-design.md).
	OrderABBA = "abba"
)

// Protocols a plan may speak (docs/design/0015-grpc-and-h2c.md).
const (
	ProtocolHTTP1 = "http1"
	// ProtocolH2C is the plan's HTTP requests over HTTP/2 without TLS (prior knowledge).
	ProtocolH2C = "h2c"
	// ProtocolGRPC is unary gRPC calls over h2c.
	ProtocolGRPC = "grpc"
)

// Health checks a service spec may ask for.
const (
	HealthHTTP = "http"
	HealthGRPC = "grpc"
)

// Kinds of run.
const (
	KindAB = "ab" // champion against challenger
	KindAA = "aa" // the champion's build on both ports: the noise floor
)

// What an A/B run's champion arm runs (the config's comparison_base,
// docs/design/0014-who-runs-code.md).
const (
	// BaseChampion is the host's champion, main's HEAD as last promoted.
	BaseChampion = "champion"
	// BaseMergeBase is the pull request's merge base, deployed for the run.
	BaseMergeBase = "merge-base"
	// BaseAncestor is an earlier champion the host kept: a drift run measures the champion
	// against it (docs/design/0023-history.md).
	BaseAncestor = "ancestor"
)

// Plan is the load generator's input: one interleaved champion/challenger experiment
// (`loadgen --plan FILE`, and the `loadgen` of a run request).
type Plan struct {
	// Names the run; templates read it as {{run}}. On a host, the run's id.
	RunID string `json:"run_id,omitempty" limit:"name" default:"run"`
	// Names the workload; the verdict engine compares results per workload and rate.
	Workload string `json:"workload,omitempty" limit:"name" default:"default"`
	// The builds measured, recorded in the result. Set by the host, never sent to it.
	Builds *Builds `json:"builds,omitempty"`
	// The two base URLs. Set by the host to its ports, never sent to it.
	Targets *Targets `json:"targets,omitempty"`
	// Requests per second for the whole run, whichever arm is in its slice.
	Rate float64 `json:"rate" limit:"rate"`
	// The length of one slice: one contiguous window of load against one arm.
	SliceSeconds float64 `json:"slice_seconds" limit:"slice_seconds"`
	// Pairs of slices, one per arm each.
	Pairs int `json:"pairs" limit:"pairs"`
	// alternate: champion first in every pair; balanced: a seeded random order per pair;
	// abba: champion first, then challenger first, pair after pair (AB BA AB BA …).
	Order string `json:"order,omitempty" limit:"order" default:"alternate"`
	// Seeds the order and the {{rand}} templates; random when left out, and recorded.
	Seed *int64 `json:"seed,omitempty" limit:"seed"`
	// Unrecorded load on both arms before the first slice.
	WarmupSeconds float64 `json:"warmup_seconds,omitempty" limit:"warmup_seconds" default:"0"`
	// The unrecorded start of every slice, less than the slice itself.
	SliceWarmupMs *int `json:"slice_warmup_ms,omitempty" limit:"slice_warmup_ms" default:"200"`
	// Keep-alive connections per target.
	Connections int `json:"connections,omitempty" limit:"connections" default:"10"`
	// Event loops the load generator runs, each on its own thread, so at most this many
	// cores; at most connections and the CPUs the generator may use (on a host, its
	// --loadgen-cpus). Default: one per 20,000 req/s of rate, at most those CPUs and
	// connections.
	GeneratorCPUs int `json:"generator_cpus,omitempty" limit:"generator_cpus"`
	// How late a request may leave so that it shares a wake-up with the requests due after
	// it; its latency still counts from its intended time, so the window is the generator's
	// timing resolution: a wake-up costs more CPU than the rest of a request, and the window
	// trades that CPU for lateness (docs/design/0016-generator-cpu.md). 0: every request has a
	// wake-up of its own.
	SendWindowUs *int `json:"send_window_us,omitempty" limit:"send_window_us" default:"250"`
	// A request's deadline; a late request is recorded at its latency.
	TimeoutMs int `json:"timeout_ms,omitempty" limit:"timeout_ms" default:"2000"`
	// Requests waiting per target before one is an overflow; by default a timeout's worth.
	MaxQueue int `json:"max_queue,omitempty" limit:"max_queue"`
	// http1: HTTP/1.1; h2c: the same requests over HTTP/2 without TLS; grpc: unary gRPC calls.
	// For h2c and grpc, connections are HTTP/2 connections per target carrying
	// concurrent streams.
	Protocol string `json:"protocol,omitempty" limit:"protocol" default:"http1"`
	// grpc only: a protobuf FileDescriptorSet (with its imports) that describes the methods,
	// relative to the plan's directory (on a host: to each arm's release). Without it, the
	// methods are resolved through each target's server reflection.
	ProtoDescriptorSet string `json:"proto_descriptor_set,omitempty"`
	// grpc only, instead of proto_descriptor_set: .proto files compiled on the host, each named
	// relative to one of proto_import_paths (directories of the build; default its root), as
	// protoc takes them. Google's well-known types are provided.
	ProtoFiles       []string `json:"proto_files,omitempty"`
	ProtoImportPaths []string `json:"proto_import_paths,omitempty"`
	// The workload mix.
	Requests []Request `json:"requests" limit:"at_least_one"`
}

// Targets are the two base URLs a run alternates between.
type Targets struct {
	// e.g. http://127.0.0.1:8001
	Champion string `json:"champion"`
	// e.g. http://127.0.0.1:8002
	Challenger string `json:"challenger"`
}

// Builds says what a run measured: its kind and the two builds. In an A/A run the
// challenger is the champion's build. champion_sha is the build the champion arm ran: the
// host's champion, or the merge base when base says so.
type Builds struct {
	Kind          string `json:"kind" limit:"kind"`
	ChampionSHA   string `json:"champion_sha" limit:"sha"`
	ChallengerSHA string `json:"challenger_sha" limit:"sha"`
	// champion: the host's champion; merge-base: the pull request's merge base, which the
	// champion arm ran instead (merge_base_sha of the run request); ancestor: an earlier
	// champion (ancestor_sha), in a drift run. Absent in results of hosts before it: the champion.
	Base string `json:"base,omitempty" limit:"base"`
}

// Request is one entry of the workload mix. Paths, header values, bodies and gRPC messages
// may hold templates: {{seq}} {{rand}} {{rand N}} {{run}} {{arm}} {{slice}}.
type Request struct {
	// The request class this entry is (docs/design/0020-request-classes.md): the report breaks a
	// verdict down by class. Default: the method and path ("GET /items/{{rand 1000}}"), or the
	// gRPC method. Unique within a workload.
	Name   string `json:"name,omitempty" limit:"class_name"`
	Method string `json:"method,omitempty" limit:"token" default:"GET"`
	// Required for http1 and h2c; a grpc request has none.
	Path    string            `json:"path,omitempty" limit:"url_path"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    *string           `json:"body,omitempty"`
	// A file read as the body, relative to the plan's directory (loadgen only: a host refuses it).
	BodyFile string `json:"body_file,omitempty"`
	// The call of a grpc plan (and only there).
	GRPC *GRPCCall `json:"grpc,omitempty"`
	// Relative share of the mix.
	Weight float64 `json:"weight,omitempty" limit:"weight" default:"1"`
}

// GRPCCall is one unary gRPC call: its method and its request message as protobuf JSON.
type GRPCCall struct {
	// The full method name, package.Service/Method.
	Method string `json:"method" limit:"grpc_method"`
	// The request message in protobuf's JSON mapping; string values may hold templates
	// (protobuf JSON takes numbers in strings too: {"hits": "{{rand 10}}"}).
	Message json.RawMessage `json:"message,omitempty"`
	// Request metadata (lowercase keys; templates in values).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ServiceSpec says how the host starts and checks a build: from the repository's config.
// Every run starts each arm the same way (docs/design/0013-symmetric-starts.md): a new process, in
// a fresh copy of its build owned by the arm's user, with its own ports and STATE_DIR.
type ServiceSpec struct {
	// An argv list run in the arm's fresh copy of the build, never through a shell. $PORT,
	// $PORT_<NAME> and $STATE_DIR (or ${PORT} …) are expanded, nothing else; a $PORT_<NAME> that
	// ports does not name is refused. Required for a build that is not a container image; an
	// image's build runs its own entrypoint and cmd when it is left out.
	Command []string `json:"command,omitempty" limit:"at_least_one"`
	// Added to the service's environment; it may not set what the host sets (PATH, HOME,
	// port_env, PORT_<NAME>, STATE_DIR). Values expand $PORT, $PORT_<NAME> and $STATE_DIR as
	// the command does.
	Env map[string]string `json:"env,omitempty"`
	// Extra ports the service listens on (a peer port, an admin port): each arm gets its own,
	// as $PORT_<NAME> in the argv and PORT_<NAME> in the environment.
	Ports []string `json:"ports,omitempty" limit:"port_names"`
	// The variable the main port is given in (GRPC_PORT for a service that reads that); PORT
	// is then free for env to set. $PORT in the argv and env values is the main port still.
	PortEnv string `json:"port_env,omitempty" limit:"env_name" default:"PORT"`
	// Services each arm runs its own fresh instance of (a Redis, a database), started before
	// setup and the service, as the arm, and stopped after it.
	Dependencies []Dependency `json:"dependencies,omitempty" limit:"dependencies"`
	// How long each dependency has to become ready.
	ReadyTimeoutSeconds float64 `json:"ready_timeout_seconds,omitempty" limit:"ready_timeout_seconds" default:"30"`
	// fresh: every start finds an empty STATE_DIR; persistent: each arm keeps its STATE_DIR
	// from one start to the next.
	State string `json:"state,omitempty" limit:"state" default:"fresh"`
	// An argv list run in the arm's fresh copy before the service starts (load a fixture,
	// create a schema), as the arm's user, expanded as the command is.
	Setup               []string `json:"setup,omitempty"`
	SetupTimeoutSeconds float64  `json:"setup_timeout_seconds,omitempty" limit:"setup_timeout_seconds" default:"60"`
	// http: GET health_path must answer 200; grpc: the standard grpc.health.v1.Health/Check
	// (service "") must answer SERVING. Either must hold before any load.
	HealthCheck string `json:"health_check,omitempty" limit:"health_check" default:"http"`
	// Must answer 200 before any load (health_check http).
	HealthPath           string  `json:"health_path,omitempty" limit:"url_path" default:"/health"`
	HealthTimeoutSeconds float64 `json:"health_timeout_seconds,omitempty" limit:"health_timeout_seconds" default:"30"`
}

// Service states.
const (
	StateFresh      = "fresh"
	StatePersistent = "persistent"
)

// RunRequest is what `perf-host run` and `perf-host aa` read on stdin.
type RunRequest struct {
	// The deployed build to measure; an A/A run leaves it out.
	ChallengerSHA string `json:"challenger_sha,omitempty" limit:"sha"`
	// When given, the run refuses a host whose champion is another build.
	ChampionSHA string `json:"champion_sha,omitempty" limit:"sha"`
	// The config's comparison_base merge-base: a deployed build (the pull request's merge base)
	// that the champion arm runs instead of the host's champion, started with this request's
	// service spec. An A/A run leaves it out.
	MergeBaseSHA string `json:"merge_base_sha,omitempty" limit:"sha"`
	// A drift run: an ancestor the host kept (history's ancestors) that the champion arm runs,
	// against the champion in the challenger arm, which challenger_sha must name. An A/A run
	// leaves it out.
	AncestorSHA string      `json:"ancestor_sha,omitempty" limit:"sha"`
	Service     ServiceSpec `json:"service"`
	// Sample both arms' CPU stacks during the run, each in its own slices, and keep them as
	// profiles beside the result (docs/design/0021-profiles.md). A host without perf runs the
	// run all the same and says why there are none.
	Profile bool `json:"profile,omitempty"`
	// The load generator's plan, without targets and builds: the host sets them.
	Loadgen Plan `json:"loadgen"`
}
