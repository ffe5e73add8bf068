// What the action sends the benchmark host: the load generator's plan, the service spec and
// the run request. Mirrors benchmark-host/contract (plan.go); test/contract checks every field,
// bound, pattern and default against the JSON Schemas generated from it.
import { z } from "zod";

export const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit");
export const sha = z.string().regex(/^[0-9a-f]{7,40}$/, "7-40 lowercase hex characters");
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters a path must not hold
const PATH = /^\/[^\x00-\x1f\x7f]*$/;
const urlPath = z.string().regex(PATH, "must start with / and hold no control characters (CR, LF, NUL…)");

/** An HTTP token (RFC 9110): a method, a header name (contract.Token). */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A latency percentile: the SLO's, and the one a floor was measured at. */
export const percentile = z.number().gt(0).lt(100);

/** Requests per second over the whole run, whichever arm is in its slice. */
export const rate = z.number().positive().max(1_000_000);

export const ARMS = ["champion", "challenger"] as const;
export const KINDS = ["ab", "aa"] as const;
/** A run's kind: champion against challenger, or the champion on both ports (A/A). */
export type Kind = (typeof KINDS)[number];

export const targetsSchema = z.looseObject({ champion: z.string(), challenger: z.string() });
export type Targets = z.infer<typeof targetsSchema>;

/** What a pull request is compared with (the config's comparison_base): the host's champion, or its merge base. */
export const COMPARISON_BASES = ["champion", "merge-base"] as const;
/**
 * What an A/B run's champion arm ran: a comparison base, or an earlier champion the host kept
 * (a drift run); absent in results of hosts before it: the champion.
 */
export const BASES = [...COMPARISON_BASES, "ancestor"] as const;

export const buildsSchema = z.looseObject({
  kind: z.enum(KINDS),
  champion_sha: sha,
  challenger_sha: sha,
  base: z.enum(BASES).optional(),
});
export type Builds = z.infer<typeof buildsSchema>;

/**
 * One unary gRPC call: package.Service/Method and its request message as protobuf JSON
 * (docs/design/0015-grpc-and-h2c.md).
 */
export const grpcCallSchema = z.looseObject({
  method: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_.]*\.[A-Za-z_][A-Za-z0-9_]*\/[A-Za-z_][A-Za-z0-9_]*$/, "package.Service/Method"),
  message: z.record(z.string(), z.unknown()).optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});

export const PROTOCOLS = ["http1", "h2c", "grpc"] as const;

/** A request class's name (requests[].name): safe in a Markdown table cell and a code span. */
export const className = z
  .string()
  .regex(
    /^[A-Za-z0-9/][A-Za-z0-9 ._/:{}-]{0,63}$/,
    "1-64 characters of A-Z a-z 0-9 space . _ / : { } -, starting with a letter, digit or /",
  );

export const requestSchema = z.looseObject({
  /** The request class this entry is; default its method and path, or its gRPC method. */
  name: className.optional(),
  method: z.string().regex(TOKEN, "an HTTP token such as GET").default("GET"),
  /** Required for http1; a grpc request has none. */
  path: urlPath.optional(),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.string().optional(),
  body_file: z.string().optional(),
  grpc: grpcCallSchema.optional(),
  weight: z.number().positive().default(1),
});

/** The load generator's plan; a run request's has no targets or builds (the host sets them). */
export const planSchema = z.looseObject({
  run_id: name.default("run"),
  workload: name.default("default"),
  builds: buildsSchema.optional(),
  targets: targetsSchema.optional(),
  rate,
  slice_seconds: z.number().positive().max(3600),
  pairs: z.number().int().min(1).max(10_000),
  order: z.enum(["alternate", "balanced", "abba"]).default("alternate"),
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  warmup_seconds: z.number().min(0).max(3600).default(0),
  slice_warmup_ms: z.number().int().min(0).max(3_600_000).default(200),
  connections: z.number().int().min(1).max(1000).default(10),
  generator_cpus: z.number().int().min(1).max(64).optional(),
  send_window_us: z.number().int().min(0).max(1000).default(250),
  timeout_ms: z.number().int().min(1).max(60_000).default(2000),
  max_queue: z.number().int().min(1).max(10_000_000).optional(),
  protocol: z.enum(PROTOCOLS).default("http1"),
  proto_descriptor_set: z.string().optional(),
  /** grpc, instead of proto_descriptor_set: .proto files of the build, compiled on the host. */
  proto_files: z.array(z.string()).optional(),
  proto_import_paths: z.array(z.string()).optional(),
  requests: z.array(requestSchema).min(1),
});
export type Plan = z.infer<typeof planSchema>;

export const SERVICE_STATES = ["fresh", "persistent"] as const;

/** A port's name, and a dependency's: the variable PORT_<NAME>. */
export const portName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_]{0,15}$/,
    "a lowercase name such as peer, admin or redis (a-z, 0-9, _; at most 16, starting with a letter)",
  );
const portNames = z.array(portName).max(8);
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a variable name: letters, digits and _, not starting with a digit");

/** A service each arm runs its own fresh instance of (a Redis), ready before setup and the service. */
export const dependencySchema = z.looseObject({
  name: portName,
  command: z
    .array(z.string())
    .min(1, "the dependency's argv list, such as [/usr/bin/redis-server, --port, $PORT_REDIS]"),
  /** One of: a port of its own that accepts a TCP connection (PORT_REDIS), or a command that exits 0. */
  ready: z.looseObject({ tcp: envName.optional(), command: z.array(z.string()).optional() }),
  ports: portNames.optional(),
  env: z.record(z.string(), z.string()).optional(),
});
export type Dependency = z.infer<typeof dependencySchema>;

/** How the host starts and checks a build; every run starts both arms this way (symmetric start). */
export const serviceSchema = z.looseObject({
  // Required for a build that is not a container image (the host says so at start); an image runs its own entrypoint and cmd.
  command: z.array(z.string()).min(1, "the start command, an argv list such as [./bin/server]").optional(),
  env: z.record(z.string(), z.string()).optional(),
  ports: portNames.optional(),
  /** The variable the main port is given in (GRPC_PORT); PORT is then env's to set. */
  port_env: envName.default("PORT"),
  dependencies: z.array(dependencySchema).max(4).optional(),
  ready_timeout_seconds: z.number().positive().max(600).default(30),
  state: z.enum(SERVICE_STATES).default("fresh"),
  setup: z.array(z.string()).optional(),
  setup_timeout_seconds: z.number().positive().max(1800).default(60),
  health_check: z.enum(["http", "grpc"]).default("http"),
  health_path: urlPath.default("/health"),
  health_timeout_seconds: z.number().positive().max(600).default(30),
});
/** A service spec as sent: defaults may be left to the host. */
export type ServiceSpec = z.input<typeof serviceSchema>;

/** What perf-host run and aa read on stdin. */
export const runRequestSchema = z.looseObject({
  challenger_sha: sha.optional(),
  champion_sha: sha.optional(),
  /** comparison_base merge-base: a deployed build the champion arm runs instead of the champion. */
  merge_base_sha: sha.optional(),
  /** A drift run: an earlier champion the host kept, run in the champion arm against the champion. */
  ancestor_sha: sha.optional(),
  service: serviceSchema,
  /** Sample both arms' CPU stacks during the run (config profile: on-red or always). */
  profile: z.boolean().optional(),
  loadgen: planSchema,
});
/** A run request as the action writes it: defaults may be left to the host. */
export type RunRequest = z.input<typeof runRequestSchema>;
