// Main's drift in words: each drift run's measured interval beside the steps merged since its
// ancestor, compounded, and the change points no single promotion crossed the threshold for. Pure.
import type { ChangePoint, DriftPoint } from "../analysis/main-history";
import { ms, msInterval, percentLabel, signedMs } from "./format";

const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}%`;
const short = (sha: string) => `\`${sha.slice(0, 7)}\``;
const day = (t: number) => new Date(t).toISOString().slice(0, 10);

/** One line per drift run, for a terminal or a log. */
export function driftLine(d: DriftPoint): string {
  const r = d.record;
  return `drift of ${r.workload}@${r.rate} at ${percentLabel(r.percentile)} since ${r.ancestor_sha.slice(0, 7)}${d.ancestorSince === null ? "" : ` (${day(d.ancestorSince)})`}: ${signedMs(r.estimate_ms)} ms ${msInterval(r.ci_ms)}, ${pct(d.percent)} of its level; ${d.steps.length === 1 ? "the 1 step merged in between comes" : `the ${d.steps.length} steps merged in between come`} to ${pct(d.stepsPercent)}`;
}

/** One line per change point. */
export function changePointLine(c: ChangePoint): string {
  const prs = c.steps.map((s) => (s.pullRequest ? `#${s.pullRequest}` : short(s.sha).replace(/`/g, ""))).join(", ");
  return `change point on ${c.key} at ${percentLabel(c.percentile)}: ${c.steps.length} advisory reds in a row (${prs}, ${day(c.steps[0]!.time)} to ${day(c.steps.at(-1)!.time)}) add up to ${signedMs(c.sumMs)} ms (${pct(c.sumPercent)}), past the block threshold of ${ms(c.thresholdMs)} ms that none crossed alone`;
}

/** The drift section of the calibration report. */
export function driftReport(
  points: readonly DriftPoint[],
  changes: readonly ChangePoint[],
  skipped: string | null,
): string {
  const out = ["## Main's drift against an ancestor", ""];
  if (points.length === 0) out.push(skipped ?? "No drift run.");
  else {
    out.push(
      "The champion measured against an earlier champion the host kept, with the gate's interleaved protocol: a paired interval for the whole span, beside the steps the gates measured in between, taken together (they compound).",
      "",
      "| workload @ rate | ancestor | measured drift | 95% CI | in % of its level | steps merged in between | together |",
      "|---|---|---:|---|---:|---:|---:|",
      ...points.map((d) => {
        const r = d.record;
        return `| ${r.workload}@${r.rate} | ${short(r.ancestor_sha)}${d.ancestorSince === null ? "" : ` (${day(d.ancestorSince)})`} | ${signedMs(r.estimate_ms)} ms | ${msInterval(r.ci_ms)} | ${pct(d.percent)} [${pct(d.ciPercent[0])}, ${pct(d.ciPercent[1])}] | ${d.steps.length} | ${pct(d.stepsPercent)} |`;
      }),
    );
  }
  if (changes.length > 0) out.push("", "### ⚠️ Change points", "", ...changes.map((c) => `- ${changePointLine(c)}`));
  return out.join("\n");
}
