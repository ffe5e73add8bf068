// A/A calibration: what an A/A run says about the host (its floor, its bias, its drift), and
// how the stored floors feed the verdict engine. Pure.

import type { FloorRecord, StoredFloor } from "../contract/host";
import { comparisonKey, floorKey } from "../contract/rules";
import { isDisturbed } from "./pairs";
import type { Comparison, GateSettings, PreflightFlag } from "./verdict";

export interface Calibration {
  key: string;
  workload: string;
  rate: number;
  /** The percentile the A/A interval was computed at: the SLO's. */
  percentile: number;
  runId: string;
  estimateMs: number;
  ciMs: [number, number];
  /** The interval's confidence (a first look's: 97.5% at the default 95% of all looks). */
  confidence: number;
  /** The floor: the half-width of the A/A interval. */
  halfWidthMs: number;
  pairs: number;
  /** The interval contains 0, as it must for identical builds on an unbiased host. */
  unbiased: boolean;
  previous: StoredFloor | null;
  /** When this is a confirmation run: the first run of this calibration, whose interval excluded 0. */
  firstRun: { runId: string; ciMs: [number, number] } | null;
  /** This floor minus the previous one, in ms and percent; null on the first calibration. */
  driftMs: number | null;
  driftPercent: number | null;
  /** The block threshold, to say when the floor is wider than it: then this host cannot block. */
  thresholdMs: number;
  /** Why the floor is not recorded (the host flagged the run, the generator fell behind), or null. */
  notRecorded: string | null;
}

const keyOf = (f: { workload: string; rate: number }) => comparisonKey(f.workload, f.rate);
const floorKeyOf = (f: { workload: string; rate: number; percentile: number }) =>
  floorKey(f.workload, f.rate, f.percentile);

/** Whether an A/A interval says the ports differ with the same build. */
/** The floor's definition: the half-width of the A/A interval. */
export function halfWidth([lo, hi]: readonly [number, number]): number {
  return (hi - lo) / 2;
}

export function excludesZero([lo, hi]: readonly number[]): boolean {
  return lo! > 0 || hi! < 0;
}

/**
 * What each A/A comparison says, against the floors stored before it at the same percentile.
 * firstRuns holds, by key, the earlier run of this calibration that a comparison was run again
 * to confirm; preflight, what the host flagged before any of the runs.
 */
export function calibrations(
  aa: readonly Comparison[],
  previous: readonly StoredFloor[],
  o: { percentile: number; preflight: readonly PreflightFlag[]; firstRuns?: ReadonlyMap<string, Comparison> },
): Calibration[] {
  const latest = new Map(previous.map((f) => [floorKeyOf(f), f]));
  return aa.map((c) => {
    const [lo, hi] = c.ciMs;
    const halfWidthMs = halfWidth(c.ciMs);
    const prev = latest.get(floorKey(c.workload, c.rate, o.percentile)) ?? null;
    const driftMs = prev ? halfWidthMs - prev.half_width_ms : null;
    return {
      key: c.key,
      workload: c.workload,
      rate: c.rate,
      percentile: o.percentile,
      runId: c.runs[0]!,
      estimateMs: c.estimateMs,
      ciMs: [lo, hi],
      confidence: c.confidence,
      halfWidthMs,
      pairs: c.pairs,
      unbiased: !excludesZero(c.ciMs),
      previous: prev,
      firstRun: firstOf(o.firstRuns?.get(c.key)),
      driftMs,
      driftPercent: prev && driftMs !== null && prev.half_width_ms > 0 ? (100 * driftMs) / prev.half_width_ms : null,
      thresholdMs: c.thresholdMs,
      notRecorded: whyNotRecorded(c, o.preflight),
    };
  });
}

/**
 * A floor measured on a disturbed host excuses real regressions as noise for as long as it
 * stands (docs/design/0011-instrument-vouches-for-itself.md: a loaded host's ±23.8 ms hid a
 * +10.4 ms regression), so none is recorded from a run the host flagged or in which the load
 * generator fell behind.
 */
function whyNotRecorded(c: Comparison, preflight: readonly PreflightFlag[]): string | null {
  const flagged = preflight.filter((f) => f.runs.some((r) => c.runs.includes(r)));
  if (flagged.length > 0)
    return `the host's pre-flight checks flagged the run (${flagged.map((f) => `${f.check}: ${f.detail}`).join("; ")})`;
  const disturbed = c.droppedPairs.filter(isDisturbed);
  if (disturbed.length > 0) {
    const generator = disturbed.some((d) => d.disturbances.length > 0);
    const foreign = disturbed.some((d) => d.hostDisturbances?.some((h) => h.foreignConnections === 0));
    const reached = disturbed.some((d) => d.hostDisturbances?.some((h) => h.foreignConnections > 0));
    const what = [
      generator ? "the load generator fell behind its schedule" : "",
      foreign ? "other work took the host's CPU (foreign load)" : "",
      reached ? "an arm served connections the load generator did not open" : "",
    ]
      .filter(Boolean)
      .join(" or ");
    return `${what} in ${disturbed.length} of ${c.pairs + c.droppedPairs.length} pairs (${disturbed.map((d) => `${d.run} pair ${d.pair}`).join(", ")})`;
  }
  return null;
}

function firstOf(c: Comparison | undefined): Calibration["firstRun"] {
  return c ? { runId: c.runs[0]!, ciMs: c.ciMs } : null;
}

/** The calibrations that found the host biased: recorded, and their interval excludes 0. */
export function biasedCalibrations(cs: readonly Calibration[]): Calibration[] {
  return cs.filter((c) => !c.unbiased && c.notRecorded === null);
}

/** What perf-host floor-record stores for a calibration (biased ones too: the bias must show). */
export function floorRecord(c: Calibration): FloorRecord {
  return {
    workload: c.workload,
    rate: c.rate,
    percentile: c.percentile,
    half_width_ms: c.halfWidthMs,
    ci_ms: c.ciMs,
    pairs: c.pairs,
  };
}

/**
 * The verdict engine's view of the host's latest floors at the verdict's percentile: the floor
 * per comparison key, any bias, and which were recorded before floors named a percentile. A
 * floor at another percentile is never quoted (p90 verdicts quoted the p99 floor, five
 * times the p90 one).
 */
export function floorSettings(
  floors: Readonly<Record<string, StoredFloor>>,
  percentile: number,
): Pick<GateSettings, "floorMs" | "hostBiasMs" | "floorPercentileAssumed"> {
  const floorMs: Record<string, number> = {};
  const hostBiasMs: Record<string, [number, number]> = {};
  const floorPercentileAssumed: string[] = [];
  for (const f of Object.values(floors).filter((x) => x.percentile === percentile)) {
    floorMs[keyOf(f)] = f.half_width_ms;
    if (excludesZero(f.ci_ms)) hostBiasMs[keyOf(f)] = f.ci_ms;
    if (f.percentile_assumed) floorPercentileAssumed.push(keyOf(f));
  }
  return { floorMs, hostBiasMs, floorPercentileAssumed };
}
