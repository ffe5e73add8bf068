// A/A calibration: what an A/A run says about the host (its floor, its bias, its drift), and
// how the stored floors feed the verdict engine. Pure.
import { isDisturbed } from "./analysis/pairs";
import { type Analysis, type Comparison, floorAboveThreshold, type GateSettings, type PreflightFlag } from "./analysis/verdict";
import type { FloorRecord, StoredFloor } from "./contract/host";
import { comparisonKey, floorKey } from "./contract/rules";
import { confidenceLabel, ms, msInterval as interval, percentLabel, signedMs } from "./report/format";
import { halfWidth } from "./report/quartet";

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
const floorKeyOf = (f: { workload: string; rate: number; percentile: number }) => floorKey(f.workload, f.rate, f.percentile);

/** Whether an A/A interval says the ports differ with the same build. */
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
      key: c.key, workload: c.workload, rate: c.rate, percentile: o.percentile, runId: c.runs[0]!,
      estimateMs: c.estimateMs, ciMs: [lo, hi], confidence: c.confidence, halfWidthMs, pairs: c.pairs,
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
 * stands (issue 12: a loaded host's ±23.8 ms hid a +10.4 ms regression), so none is recorded
 * from a run the host flagged or in which the load generator fell behind.
 */
function whyNotRecorded(c: Comparison, preflight: readonly PreflightFlag[]): string | null {
  const flagged = preflight.filter((f) => f.runs.some((r) => c.runs.includes(r)));
  if (flagged.length > 0) return `the host's pre-flight checks flagged the run (${flagged.map((f) => `${f.check}: ${f.detail}`).join("; ")})`;
  const disturbed = c.droppedPairs.filter(isDisturbed);
  if (disturbed.length > 0) {
    const generator = disturbed.some((d) => d.disturbances.length > 0);
    const foreign = disturbed.some((d) => d.hostDisturbances?.some((h) => h.foreignConnections === 0));
    const reached = disturbed.some((d) => d.hostDisturbances?.some((h) => h.foreignConnections > 0));
    const what = [generator ? "the load generator fell behind its schedule" : "", foreign ? "other work took the host's CPU (foreign load)" : "", reached ? "an arm served connections the load generator did not open" : ""].filter(Boolean).join(" or ");
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
  return { workload: c.workload, rate: c.rate, percentile: c.percentile, half_width_ms: c.halfWidthMs, ci_ms: c.ciMs, pairs: c.pairs };
}

/**
 * The verdict engine's view of the host's latest floors at the verdict's percentile: the floor
 * per comparison key, any bias, and which were recorded before floors named a percentile. A
 * floor at another percentile is never quoted (issue 12: p90 verdicts quoted the p99 floor, five
 * times the p90 one).
 */
export function floorSettings(floors: Readonly<Record<string, StoredFloor>>, percentile: number): Pick<GateSettings, "floorMs" | "hostBiasMs" | "floorPercentileAssumed"> {
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

/** One line per calibration, for a terminal or a log. */
export function calibrationLine(c: Calibration): string {
  const at = `${c.key} at ${percentLabel(c.percentile)}`;
  if (c.notRecorded) return `A/A floor for ${at} not recorded: ${c.notRecorded}; the host keeps its previous floor${c.previous ? ` (±${ms(c.previous.half_width_ms)} ms)` : ""}; run the calibration again on a quiet host`;
  const drift = c.driftMs === null ? "first calibration" : `drift ${signedMs(c.driftMs)} ms since ${c.previous!.time.slice(0, 10)}`;
  if (!c.unbiased) {
    const runs = c.firstRun ? `in two runs (${interval(c.firstRun.ciMs)} and ${interval(c.ciMs)})` : `(A/A ${interval(c.ciMs)})`;
    return `A/A interval for ${at} excludes 0 ${runs}: the two ports differ with the same build (biased host); every verdict will say so until a calibration contains 0`;
  }
  const cleared = c.firstRun ? `; a first run's interval ${interval(c.firstRun.ciMs)} excluded 0 by chance: this confirmation run's contains it` : "";
  const warning = cannotBlock(c) ? `; warning: ${cannotBlock(c)}` : "";
  return `A/A floor for ${at}: ±${ms(c.halfWidthMs)} ms (A/A ${interval(c.ciMs)}, n=${c.pairs} pairs; ${drift}${cleared}); later verdicts quote it${warning}`;
}

/** The warning a recorded floor wider than the block threshold carries, or null. */
function cannotBlock(c: Calibration): string | null {
  return c.halfWidthMs > c.thresholdMs ? floorAboveThreshold(c.halfWidthMs, c.percentile, c.thresholdMs) : null;
}

/** Why a key was measured twice, and what the second run said. */
function confirmationNote(c: Calibration): string {
  const first = `- ${c.key}: the first run's interval ${interval(c.firstRun!.ciMs)} (\`${c.firstRun!.runId}\`) excluded 0, so it was measured again`;
  const oneIn = Math.round(1 / (1 - c.confidence));
  return c.unbiased
    ? `${first}; the confirmation run's interval contains 0: chance, not bias (an unbiased host excludes 0 in 1 run of ${oneIn}). The confirmation run is the floor.`
    : `${first}; the confirmation run's excludes 0 too (both would happen by chance in 1 calibration of ${(oneIn ** 2).toLocaleString("en-US")}): the host is biased.`;
}

/** The calibration report: floor, A/A interval and drift per workload and rate, and the history. */
export function calibrationReport(cs: readonly Calibration[], o: { champion: string; history: readonly StoredFloor[] }): string {
  const biased = biasedCalibrations(cs);
  const unrecorded = cs.filter((c) => c.notRecorded);
  const state = biased.length > 0 ? "⚠️ biased host" : unrecorded.length > 0 ? "⚠️ floors not recorded" : "✅ unbiased";
  const percentiles = [...new Set(cs.map((c) => percentLabel(c.percentile)))].join(", ");
  const out = [
    `## perf-gate calibration: ${state}`,
    "",
    `A/A runs of the champion \`${o.champion.slice(0, 7)}\` on both ports, at ${percentiles}. The floor is the half-width of the A/A 95% interval; verdicts at the same percentile treat differences within it as noise.`,
    "",
    "| workload @ rate | floor | A/A estimate | A/A 95% CI | contains 0 | pairs | previous floor | drift |",
    "|---|---:|---:|---|---|---:|---|---:|",
    ...cs.map((c) => {
      const prev = c.previous ? `±${ms(c.previous.half_width_ms)} ms (${c.previous.time.slice(0, 10)})` : "none";
      const drift = c.driftMs === null ? "—" : `${signedMs(c.driftMs)} ms${c.driftPercent === null ? "" : ` (${c.driftPercent > 0 ? "+" : ""}${c.driftPercent.toFixed(0)}%)`}`;
      const floor = c.notRecorded ? `~~±${ms(c.halfWidthMs)} ms~~ not recorded` : `±${ms(c.halfWidthMs)} ms`;
      return `| ${c.key} | ${floor} | ${signedMs(c.estimateMs)} ms | ${interval(c.ciMs)} | ${c.unbiased ? "yes" : "**no**"} | ${c.pairs} | ${prev} | ${drift} |`;
    }),
  ];
  if (unrecorded.length > 0) {
    out.push("", ...unrecorded.map((c) => `- **${c.key}: no floor recorded.** ${capitalized(c.notRecorded!)}. A floor measured on a disturbed host would excuse real regressions as noise for as long as it stands, so the host keeps its previous floor${c.previous ? ` (±${ms(c.previous.half_width_ms)} ms)` : " (none)"}. Run the calibration again when the host is quiet.`));
  }
  const warned = cs.filter((c) => !c.notRecorded && cannotBlock(c));
  if (warned.length > 0) out.push("", ...warned.map((c) => `> ⚠️ **${c.key}**: ${cannotBlock(c)}.`));
  const confirmed = cs.filter((c) => c.firstRun);
  if (confirmed.length > 0) out.push("", ...confirmed.map(confirmationNote));
  if (biased.length > 0) {
    out.push("", `**The host is biased** for ${biased.map((c) => c.key).join(", ")}: with the same build on both ports, the interval excludes 0 in two runs. Every verdict says so until a calibration contains 0 again. Check what differs between the ports (CPU pinning, other load, port-specific settings), then rerun this calibration.`);
  }
  const trend = cs.map((c) => {
    const past = o.history.filter((f) => floorKeyOf(f) === floorKey(c.workload, c.rate, c.percentile)).slice(-5);
    return `- ${c.key} at ${percentLabel(c.percentile)}: ${[...past.map((f) => `±${ms(f.half_width_ms)} (${f.time.slice(0, 10)})`), `±${ms(c.halfWidthMs)} (now${c.notRecorded ? ", not recorded" : ""})`].join(" → ")}`;
  });
  out.push("", "### Floor history", "", ...trend, "");
  return out.join("\n");
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * Whether a short A/A run of a new champion verifies it: with the same build on both ports, the
 * ports must not fail differently, nor differ past the block threshold over the whole interval.
 * A failed check rolls the champion back, so a port difference must be beyond doubt: a point
 * estimate past the threshold is what a few noisy pairs often give by chance. A smaller
 * difference that is still detectable is a note, not a failure: the calibration's business.
 */
export function championCheck(a: Analysis): { passed: boolean; findings: string[]; notes: string[] } {
  const findings: string[] = [];
  const notes: string[] = [];
  for (const c of a.comparisons) {
    if (c.errorRegression && c.errorRegression.p < 1 - c.confidence) {
      findings.push(`${c.key}: the ports fail differently (${c.champion.errors} and ${c.challenger.errors} errors)`);
    }
    const [lo, hi] = c.ciMs;
    const difference = `${c.key}: the ports differ by ${signedMs(c.estimateMs)} ms at ${percentLabel(a.percentile)} (${confidenceLabel(c.confidence)} CI ${interval(c.ciMs)})`;
    if (lo > c.thresholdMs || hi < -c.thresholdMs) findings.push(`${difference}, wholly beyond the block threshold ±${ms(c.thresholdMs)} ms`);
    else if (excludesZero(c.ciMs)) notes.push(`${difference}: not beyond the block threshold ±${ms(c.thresholdMs)} ms, so no rollback; if the calibration workflow finds it too, the host is biased`);
  }
  return { passed: findings.length === 0, findings, notes };
}
