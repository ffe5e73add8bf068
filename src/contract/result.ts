// What the benchmark host sends back: the load generator's result, the outcome of a run, the
// pre-flight findings. Mirrors benchmark-host/contract (result.go). Objects are loose, so a
// newer host's extra fields stay readable; test/contract checks that both sides declare the
// same fields.
import { z } from "zod";
import constants from "../../benchmark-host/contract/schema/constants.json";
import { resultInconsistency } from "./consistency";
import { armStartSchema, isolationSchema, resourceAccountingSchema } from "./isolation";
import { MessageError, parseMessage } from "./parse";
import { ARMS, KINDS, planSchema, sha } from "./plan";

const count = z.number().int().nonnegative();
const amount = z.number().nonnegative();
/** A slice's named percentiles and maximum, in µs (Go's contract.Latency). */
const percentiles = z.looseObject({ p50: count, p90: count, p99: count, p999: count, max: count });

export const hostInfoSchema = z.looseObject({
  hostname: z.string(),
  go_version: z.string(),
  gomaxprocs: z.number().int(),
  num_cpu: z.number().int(),
  cpu_model: z.string(),
  kernel: z.string(),
  load_avg: z.array(z.number()).length(3),
  cpu_governor: z.string().optional(),
  cpu_max_freq_khz: z.number().int().optional(),
  cpu_idle: z.string(),
  generator_slice: z.string().optional(),
});

const errorCounts = z.looseObject({
  connect: count,
  timeout: count,
  "4xx": count,
  "5xx": count,
  other: count,
  /** gRPC calls answered with a status other than OK, by code name. */
  grpc: z.record(z.string(), count).optional(),
});

/** One request class's share of a slice (an entry of the plan's requests); the classes add up to the slice. */
export const classSliceSchema = z.looseObject({
  completed: count,
  ok: count,
  recorded: count,
  errors: errorCounts,
  latency_us: percentiles,
  histogram: z.string(),
  short_of_budget: z.array(z.string()),
});
export type ClassSlice = z.infer<typeof classSliceSchema>;

export const sliceSchema = z.looseObject({
  index: count,
  pair: count,
  arm: z.enum(ARMS),
  start: z.string(),
  end: z.string(),
  scheduled: count,
  sent: count,
  completed: count,
  ok: count,
  recorded: count,
  errors: errorCounts,
  overflow: count,
  new_connections: count,
  achieved_rps: amount,
  ok_rps: amount,
  latency_us: percentiles,
  service_time_us: z.looseObject({ p50: count, p99: count }),
  dispatch_lag_us: percentiles,
  connection_wait_us: z.looseObject({ p50: count, p99: count }),
  histogram: z.string(),
  short_of_budget: z.array(z.string()),
  /** Per request class, one per entry of the plan's requests; absent for one entry or more than MAX_CLASSES. */
  classes: z.array(classSliceSchema).optional(),
  // What the measured arm used during the slice, from its cgroup (the host result's
  // resource_accounting says from where); absent from the load generator alone.
  service_cpu_us_per_request: amount.optional(),
  service_cpu_cores: amount.optional(),
  service_rss_bytes: count.optional(),
  idle_arm_cpu_cores: amount.optional(),
  // Connections the measured arm held that the load generator did not open, and who opened
  // them: the host marks the slice disturbed (host_disturbance "reached: …").
  foreign_connections: count.optional(),
  foreign_peers: z.array(z.string()).optional(),
  // The load generator's own CPU over the slice (docs/design/0016-generator-cpu.md).
  generator_cpu_cores: amount.optional(),
  generator_cpu_us_per_request: amount.optional(),
  // CPU the host spent on anything but this run during the slice, and why the host could not
  // vouch for it (foreign load past its limit): the verdict drops its pair as a disturbed one.
  foreign_cpu_cores: amount.optional(),
  host_disturbance: z.string().optional(),
  valid: z.boolean(),
  invalid_reason: z.string().optional(),
});
export type Slice = z.infer<typeof sliceSchema>;

export const resultSchema = z.looseObject({
  schema_version: z.literal(constants.schema_version),
  generator: z.string(),
  plan: planSchema,
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  order: z.array(z.enum(ARMS)),
  host: hostInfoSchema,
  started: z.string(),
  ended: z.string(),
  partial: z.boolean(),
  partial_reason: z.string().optional(),
  warmup: z.looseObject({ seconds: amount, sent: count, ok: count, errors: count, overflow: count }),
  slices: z.array(sliceSchema),
});
export type LoadgenResult = z.infer<typeof resultSchema>;

export const RUN_STATUSES = ["ok", "error", "aborted"] as const;

/** Why a run failed (Go's contract.ErrorKinds): a failure of one arm names the arm. */
export const ERROR_KINDS = [
  "preflight",
  "plan",
  "loadgen",
  "overran",
  "aborted",
  "write_failed",
  "executor_died",
  "internal",
  "champion_unhealthy",
  "challenger_unhealthy",
  "champion_crashed",
  "challenger_crashed",
  "champion_out_of_memory",
  "challenger_out_of_memory",
  "champion_out_of_disk",
  "challenger_out_of_disk",
  "champion_not_stopped",
  "challenger_not_stopped",
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

export const outcomeSchema = z.looseObject({
  run_id: z.string(),
  kind: z.enum(KINDS).optional(),
  status: z.enum(RUN_STATUSES),
  error_kind: z.enum(ERROR_KINDS).optional(),
  message: z.string().optional(),
  started: z.string(),
  ended: z.string(),
});
export type RunOutcome = z.infer<typeof outcomeSchema>;

export const findingSchema = z.looseObject({
  check: z.string(),
  status: z.enum(["ok", "flag", "refuse"]),
  detail: z.string(),
});

const armIdentitySchema = z.looseObject({ sha, build: z.string(), service: z.string() });

/**
 * What a run measured: the builds' digests, each arm's service spec, the placement and the
 * generator's settings. Only runs of one identity (equal digests) are pooled.
 */
export const identitySchema = z.looseObject({
  digest: z.string(),
  champion: armIdentitySchema,
  challenger: armIdentitySchema,
  placement: z.string(),
  generator: z.string(),
  champion_spec_changed: z.boolean().optional(),
});
export type Identity = z.infer<typeof identitySchema>;

export const PROFILE_STATUSES = ["recorded", "not_available"] as const;

/**
 * Both arms' CPU stacks, sampled in their own slices (Go's contract.Profiles): each arm's pprof
 * file, and per slice the samples of the functions carrying most of either arm's CPU.
 */
export const profilesSchema = z.looseObject({
  status: z.enum(PROFILE_STATUSES),
  reason: z.string().optional(),
  event: z.string().optional(),
  frequency_hz: count.optional(),
  cpu_seconds: amount.optional(),
  arms: z.record(z.string(), z.looseObject({ file: z.string(), bytes: count, samples: count })).optional(),
  functions: z.array(z.string()).optional(),
  callers: z.array(z.array(z.number().int())).optional(),
  slices: z
    .array(
      z.looseObject({
        index: count,
        samples: count,
        functions: z.array(z.tuple([z.number().int(), z.number().int(), z.number().int()])),
      }),
    )
    .optional(),
});
export type Profiles = z.infer<typeof profilesSchema>;

/** What perf-host result prints for a run that sent load. */
export const hostResultSchema = resultSchema.extend({
  outcome: outcomeSchema,
  preflight: z.array(findingSchema),
  isolation: isolationSchema.optional(),
  resource_accounting: z.record(z.string(), resourceAccountingSchema).optional(),
  arms: z.record(z.string(), armStartSchema).optional(),
  identity: identitySchema.optional(),
  profiles: profilesSchema.optional(),
});
export type HostResult = z.infer<typeof hostResultSchema>;

/**
 * Validates a load generator's (or a host's) result, its fields and what they say together
 * (resultInconsistency); `source` names it in errors.
 */
export function parseResult(source: string, doc: unknown): LoadgenResult {
  const result = parseMessage(resultSchema, source, doc, "a load generator result");
  const problem = resultInconsistency(result);
  if (problem) throw new MessageError(`${source}: not a load generator result: ${problem}`);
  return result;
}
