// The calibration's words: one line per floor for a log, the calibration report, and the
// verdict on a new champion's short A/A check.

import { biasedCalibrations, type Calibration, excludesZero } from "../analysis/floors";
import { type Analysis, floorAboveThreshold } from "../analysis/verdict";
import type { StoredFloor } from "../contract/host";
import { floorKey } from "../contract/rules";
import { confidenceLabel, msInterval as interval, ms, percentLabel, signedMs } from "./format";

const floorKeyOf = (f: { workload: string; rate: number; percentile: number }) =>
  floorKey(f.workload, f.rate, f.percentile);

/** One line per calibration, for a terminal or a log. */
export function calibrationLine(c: Calibration): string {
  const at = `${c.key} at ${percentLabel(c.percentile)}`;
  if (c.notRecorded)
    return `A/A floor for ${at} not recorded: ${c.notRecorded}; the host keeps its previous floor${c.previous ? ` (±${ms(c.previous.half_width_ms)} ms)` : ""}; run the calibration again on a quiet host`;
  const drift =
    c.driftMs === null ? "first calibration" : `drift ${signedMs(c.driftMs)} ms since ${c.previous!.time.slice(0, 10)}`;
  if (!c.unbiased) {
    const runs = c.firstRun
      ? `in two runs (${interval(c.firstRun.ciMs)} and ${interval(c.ciMs)})`
      : `(A/A ${interval(c.ciMs)})`;
    return `A/A interval for ${at} excludes 0 ${runs}: the two ports differ with the same build (biased host); every verdict will say so until a calibration contains 0`;
  }
  const cleared = c.firstRun
    ? `; a first run's interval ${interval(c.firstRun.ciMs)} excluded 0 by chance: this confirmation run's contains it`
    : "";
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
export function calibrationReport(
  cs: readonly Calibration[],
  o: { champion: string; history: readonly StoredFloor[] },
): string {
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
      const drift =
        c.driftMs === null
          ? "—"
          : `${signedMs(c.driftMs)} ms${c.driftPercent === null ? "" : ` (${c.driftPercent > 0 ? "+" : ""}${c.driftPercent.toFixed(0)}%)`}`;
      const floor = c.notRecorded ? `~~±${ms(c.halfWidthMs)} ms~~ not recorded` : `±${ms(c.halfWidthMs)} ms`;
      return `| ${c.key} | ${floor} | ${signedMs(c.estimateMs)} ms | ${interval(c.ciMs)} | ${c.unbiased ? "yes" : "**no**"} | ${c.pairs} | ${prev} | ${drift} |`;
    }),
  ];
  if (unrecorded.length > 0) {
    out.push(
      "",
      ...unrecorded.map(
        (c) =>
          `- **${c.key}: no floor recorded.** ${capitalized(c.notRecorded!)}. A floor measured on a disturbed host would excuse real regressions as noise for as long as it stands, so the host keeps its previous floor${c.previous ? ` (±${ms(c.previous.half_width_ms)} ms)` : " (none)"}. Run the calibration again when the host is quiet.`,
      ),
    );
  }
  const warned = cs.filter((c) => !c.notRecorded && cannotBlock(c));
  if (warned.length > 0) out.push("", ...warned.map((c) => `> ⚠️ **${c.key}**: ${cannotBlock(c)}.`));
  const confirmed = cs.filter((c) => c.firstRun);
  if (confirmed.length > 0) out.push("", ...confirmed.map(confirmationNote));
  if (biased.length > 0) {
    out.push(
      "",
      `**The host is biased** for ${biased.map((c) => c.key).join(", ")}: with the same build on both ports, the interval excludes 0 in two runs. Every verdict says so until a calibration contains 0 again. Check what differs between the ports (CPU pinning, other load, port-specific settings), then rerun this calibration.`,
    );
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
    if (lo > c.thresholdMs || hi < -c.thresholdMs)
      findings.push(`${difference}, wholly beyond the block threshold ±${ms(c.thresholdMs)} ms`);
    else if (excludesZero(c.ciMs))
      notes.push(
        `${difference}: not beyond the block threshold ±${ms(c.thresholdMs)} ms, so no rollback; if the calibration workflow finds it too, the host is biased`,
      );
  }
  return { passed: findings.length === 0, findings, notes };
}
