// The host's history: the gate records the client sends (gate-record), the drift records
// (drift-record), and the document `perf-host history` prints, which the action and the CLI
// export and `perf-gate history --from` reads back. Mirrors benchmark-host/contract
// (history.go); test/contract checks every field against the generated JSON Schemas.
import { z } from "zod";
import constants from "../../benchmark-host/contract/schema/constants.json";
import { floorRecordSchema } from "./host";
import { MessageError, parseMessage } from "./parse";
import { BASES, name, percentile, rate, sha } from "./plan";

/** The version of the history's entries and document; a newer one is refused, never misread. */
export const HISTORY_SCHEMA_VERSION = constants.history_schema_version;

export const VERDICTS = ["green", "red", "grey"] as const;
export const BLOCK_REASONS = ["latency", "errors", "cpu", "budget"] as const;
export const HISTORY_KINDS = ["gate", "promotion", "rollback", "calibration", "drift"] as const;

const runId = z.string().regex(new RegExp(constants.run_id_pattern));
const pullRequest = z.number().int().min(1).max(999_999_999);
/** A difference in latency, or an interval's end. */
const ms = z.number().min(-1e6).max(1e6);
/** An arm's latency at a percentile: positive, since percents are of it. */
const levelMs = z.number().gt(0).max(1e6);
const halfWidthMs = z.number().min(0).max(1e6);
const pairs = z.number().int().min(2).max(10_000);
/** A change in percent of what it changed from. */
const percentChange = z.number().min(-100).max(1e6);
const interval = z.tuple([ms, ms]);
const count = z.number().int().min(0);

/** The monthly regression budget as a gate found it, in percent of main's level (docs/design/0024-regression-budget.md). */
export const budgetAccountSchema = z.looseObject({
  limit_percent: z.number().gt(0).max(100),
  main_percent: percentChange,
  /** What main's change rests on: the latest drift run and the steps since (drift), or the steps alone. */
  basis: z.enum(["drift", "steps"]),
  change_percent: percentChange,
  exceeded: z.boolean(),
});
export type BudgetAccount = z.infer<typeof budgetAccountSchema>;

export const comparisonRecordSchema = z.looseObject({
  workload: name,
  rate,
  verdict: z.enum(VERDICTS),
  blocking: z.boolean(),
  blocked_by: z.array(z.enum(BLOCK_REASONS)).optional(),
  estimate_ms: ms,
  ci_ms: interval,
  /** The champion arm's latency at the percentile: main's level, the unit of the budget's percents. */
  champion_ms: levelMs,
  floor_ms: halfWidthMs.optional(),
  threshold_ms: halfWidthMs,
  pairs,
  cpu_percent: percentChange.optional(),
  rss_percent: percentChange.optional(),
  identity: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  budget: budgetAccountSchema.optional(),
});
export type ComparisonRecord = z.infer<typeof comparisonRecordSchema>;

/** What perf-host gate-record reads on stdin: a finished gate's verdict as the client decided it. */
export const gateRecordSchema = z.looseObject({
  pull_request: pullRequest.optional(),
  challenger_sha: sha,
  champion_sha: sha,
  base: z.enum(BASES),
  verdict: z.enum(VERDICTS),
  blocking: z.boolean(),
  percentile,
  comparisons: z.array(comparisonRecordSchema).min(1).max(256),
  runs: z.array(runId).max(1024),
  url: z
    .string()
    .regex(/^https?:\/\/[^\s"'<>]{1,1000}$/)
    .optional(),
});
export type GateRecord = z.infer<typeof gateRecordSchema>;

/** What perf-host drift-record reads on stdin: the champion against an ancestor. */
export const driftRecordSchema = z.looseObject({
  workload: name,
  rate,
  percentile,
  champion_sha: sha,
  ancestor_sha: sha,
  estimate_ms: ms,
  ci_ms: interval,
  ancestor_ms: levelMs,
  pairs,
});
export type DriftRecord = z.infer<typeof driftRecordSchema>;

export const championChangeSchema = z.looseObject({
  sha,
  previous: sha.optional(),
  pull_request: pullRequest.optional(),
  /** The promoted build's last gate on the host: the step main took. */
  step: z.looseObject({ gated: z.string(), gate: gateRecordSchema }).optional(),
});
export type ChampionChange = z.infer<typeof championChangeSchema>;

const historyVersion = z.literal(HISTORY_SCHEMA_VERSION);

export const historyEntrySchema = z.looseObject({
  schema_version: historyVersion,
  kind: z.enum(HISTORY_KINDS),
  time: z.string(),
  run_id: runId.optional(),
  gate: gateRecordSchema.optional(),
  change: championChangeSchema.optional(),
  calibration: floorRecordSchema.optional(),
  drift: driftRecordSchema.optional(),
});
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

export const ancestorSchema = z.looseObject({ sha, since: z.string(), until: z.string().optional() });
export type Ancestor = z.infer<typeof ancestorSchema>;

/** What perf-host history prints. */
export const historySchema = z.looseObject({
  schema_version: historyVersion,
  /** The host's clock when it was read: the history's "now". */
  time: z.string(),
  champion: z.string(),
  ancestors: z.array(ancestorSchema),
  entries: z.array(historyEntrySchema),
  bound_bytes: count,
  dropped: count,
});
export type History = z.infer<typeof historySchema>;

/** The largest history document read: far above what a host keeps (4 MiB of entries by default). */
export const MAX_HISTORY_BYTES = 64 << 20;

/**
 * Reads a history document (a host's answer, or a file exported from one). One from a newer
 * perf-host is refused as such before its fields are read; then every field is checked against
 * the contract, every time must be a date, and each entry must carry the record its kind says.
 * Errors name the source and the field.
 */
export function parseHistory(source: string, doc: unknown): History {
  const version = (doc as { schema_version?: unknown } | null)?.schema_version;
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new MessageError(`${source}: not a perf-gate history (a JSON object with schema_version, entries, …)`);
  if (typeof version !== "number")
    throw new MessageError(`${source}: not a perf-gate history: schema_version: required`);
  if (version > HISTORY_SCHEMA_VERSION) {
    throw new MessageError(
      `${source}: history schema_version ${version} is newer than this perf-gate reads (${HISTORY_SCHEMA_VERSION}): it was written by a newer perf-host; upgrade perf-gate`,
    );
  }
  const h = parseMessage(historySchema, source, doc, "a perf-gate history");
  const problems = historyProblems(h);
  if (problems.length > 0)
    throw new MessageError(`${source}: not a perf-gate history: ${problems.slice(0, 5).join("; ")}`);
  return h;
}

const RECORD_OF = {
  gate: "gate",
  promotion: "change",
  rollback: "change",
  calibration: "calibration",
  drift: "drift",
} as const;

function historyProblems(h: History): string[] {
  const out: string[] = [];
  const date = (at: string, s: string | undefined) => {
    if (s !== undefined && Number.isNaN(Date.parse(s)))
      out.push(`${at}: not a date: ${JSON.stringify(s.slice(0, 40))}`);
  };
  const around = (at: string, estimate: number, [lo, hi]: readonly [number, number]) => {
    if (!(lo <= estimate && estimate <= hi))
      out.push(`${at}.ci_ms: [${lo}, ${hi}] does not hold the estimate ${estimate}`);
  };
  // A change of -100% or less leaves main no latency at all: no measurement reads so, and the
  // budget's steps, which compound, could not be undone.
  const level = (at: string, estimate: number, levelMs: number, of: string) => {
    if (levelMs + estimate <= 0)
      out.push(`${at}.estimate_ms: ${estimate} takes the ${of} ${levelMs} ms to no latency (at most 0 ms)`);
  };
  const gate = (at: string, g: GateRecord) => {
    for (const [j, c] of g.comparisons.entries()) {
      around(`${at}.comparisons[${j}]`, c.estimate_ms, c.ci_ms);
      level(`${at}.comparisons[${j}]`, c.estimate_ms, c.champion_ms, "champion_ms");
    }
  };
  date("time", h.time);
  h.ancestors.forEach((a, i) => {
    date(`ancestors[${i}].since`, a.since);
    date(`ancestors[${i}].until`, a.until);
  });
  h.entries.forEach((e, i) => {
    const at = `entries[${i}]`;
    date(`${at}.time`, e.time);
    const carried = (["gate", "change", "calibration", "drift"] as const).filter((k) => e[k] !== undefined);
    if (carried.length !== 1 || carried[0] !== RECORD_OF[e.kind])
      out.push(
        `${at}: a ${e.kind} entry carries ${RECORD_OF[e.kind]} and nothing else (it carries ${carried.join(", ") || "nothing"})`,
      );
    if (e.gate) gate(`${at}.gate`, e.gate);
    if (e.change?.step) {
      date(`${at}.change.step.gated`, e.change.step.gated);
      gate(`${at}.change.step.gate`, e.change.step.gate);
    }
    if (e.drift) {
      around(`${at}.drift`, e.drift.estimate_ms, e.drift.ci_ms);
      level(`${at}.drift`, e.drift.estimate_ms, e.drift.ancestor_ms, "ancestor_ms");
    }
  });
  return out;
}
