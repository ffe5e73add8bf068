// The load generator's result document (benchmark-host/internal/result), validated before
// any number is used. Unknown extra fields are allowed so a newer host stays readable.
import { z } from "zod";

const count = z.number().int().nonnegative();
const micros = z.number().nonnegative();

export const sliceSchema = z.looseObject({
  index: count,
  pair: count,
  arm: z.enum(["champion", "challenger"]),
  start: z.string(),
  end: z.string(),
  scheduled: count,
  sent: count,
  completed: count,
  ok: count,
  recorded: count,
  errors: z.looseObject({ connect: count, timeout: count, "4xx": count, "5xx": count, other: count }),
  overflow: count,
  new_connections: count,
  achieved_rps: z.number().nonnegative(),
  ok_rps: z.number().nonnegative(),
  latency_us: z.looseObject({ p50: micros, p90: micros, p99: micros, p999: micros, max: micros }),
  service_time_us: z.looseObject({ p50: micros, p99: micros }),
  dispatch_lag_us: z.looseObject({ p50: micros, p99: micros }),
  histogram: z.string(),
  short_of_budget: z.array(z.string()),
  valid: z.boolean(),
  invalid_reason: z.string().optional(),
});

export const resultSchema = z.looseObject({
  schema_version: z.literal(1),
  generator: z.string(),
  plan: z.looseObject({
    run_id: z.string(),
    workload: z.string().default("default"),
    meta: z.record(z.string(), z.string()).optional(),
    rate: z.number().positive(),
    slice_seconds: z.number().positive(),
    pairs: z.number().int().positive(),
  }),
  seed: z.number().int().nonnegative(),
  order: z.array(z.enum(["champion", "challenger"])),
  host: z.looseObject({}),
  started: z.string(),
  ended: z.string(),
  partial: z.boolean(),
  partial_reason: z.string().optional(),
  slices: z.array(sliceSchema),
});

export type Slice = z.infer<typeof sliceSchema>;
export type LoadgenResult = z.infer<typeof resultSchema>;

/** An input the analysis refuses, with a message that names the problem. */
export class AnalysisInputError extends Error {
  override name = "AnalysisInputError";
}

/** Validates a parsed JSON document; `source` names it in errors (e.g. the file path). */
export function parseResult(source: string, doc: unknown): LoadgenResult {
  const parsed = resultSchema.safeParse(doc);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map((i) => `${formatPath(i.path)}: ${i.message}`);
    throw new AnalysisInputError(`${source}: not a load generator result: ${problems.join("; ")}`);
  }
  return parsed.data;
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(document)";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}
