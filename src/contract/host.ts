// What the host keeps and reports: floors, finished runs, its status, and perf-host's exit
// codes. Mirrors benchmark-host/contract (host.go); the constants come from the generated
// constants.json, so they are defined once, in Go.
import { z } from "zod";
import constants from "../../benchmark-host/contract/schema/constants.json";
import { isolationSchema } from "./isolation";
import { KINDS, name, percentile, rate, sha } from "./plan";
import { RUN_STATUSES } from "./result";

const runId = z.string().regex(new RegExp(constants.run_id_pattern));

/** What perf-host floor-record reads on stdin: one A/A calibration. */
export const floorRecordSchema = z.looseObject({
  workload: name,
  rate,
  /** The percentile the A/A interval was computed at: a verdict at pNN quotes the floor at pNN. */
  percentile,
  half_width_ms: z.number().min(0).max(1e6),
  ci_ms: z.tuple([z.number(), z.number()]),
  pairs: z.number().int().min(2).max(10_000),
});
export type FloorRecord = z.infer<typeof floorRecordSchema>;

/** A recorded floor: perf-host floors and status (keyed by floorKey). */
export const floorSchema = floorRecordSchema.extend({
  run_id: runId,
  time: z.string(),
  /** Recorded before floors named their percentile: taken to be at LEGACY_FLOOR_PERCENTILE. */
  percentile_assumed: z.boolean().optional(),
});
export type StoredFloor = z.infer<typeof floorSchema>;

/** A finished run: perf-host runs SHA. */
export const runSummarySchema = z.looseObject({
  run_id: runId,
  kind: z.enum(KINDS),
  status: z.enum(RUN_STATUSES),
  champion_sha: sha,
  challenger_sha: sha,
  workload: name,
  rate,
  started: z.string(),
  ended: z.string(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;

export const hostStatusSchema = z.looseObject({
  perf_host_version: z.string(),
  champion: z.string(),
  /** When it became the champion there (RFC 3339); absent before perf-host kept it. */
  champion_since: z.string().optional(),
  previous: z.string(),
  champion_supervised: z.boolean(),
  lock: z
    .looseObject({ holder: z.string(), pid: z.number().int(), since: z.string(), age_seconds: z.number() })
    .nullable(),
  floors: z.record(z.string(), floorSchema),
  disk_free_bytes: z.number().int().nonnegative(),
  memory_available_bytes: z.number().int().nonnegative(),
  load_avg: z.array(z.number()).length(3),
  releases: z.array(z.string()),
  ports: z.record(z.string(), z.number().int()),
  isolation: isolationSchema.optional(),
});
export type HostStatus = z.infer<typeof hostStatusSchema>;

/** perf-host's exit codes. */
export const EXIT = constants.exit_codes;

/** Starts the last line perf-host wait prints; the outcome as JSON follows. */
export const OUTCOME_MARKER = constants.outcome_marker;
