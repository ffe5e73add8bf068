// The Markdown report: what a check-run summary, a PR comment and a job summary show. Pure,
// and always within GitHub's 65,535-character limit for check summaries.
import { errorClasses } from "../analysis/failures";
import type { Analysis, ArmSummary, Comparison } from "../analysis/verdict";
import { mermaidChart } from "./chart";
import { confidenceLabel, ms, msInterval, percentLabel, pValue, rps, signedMs, signedPercent } from "./format";
import { quartet } from "./quartet";
import { resourceChanges, resourceRows } from "./resources";

export const GITHUB_SUMMARY_LIMIT = 65_535;

const badge: Record<Analysis["verdict"], string> = { green: "🟢 green", red: "🔴 red", grey: "⚪ grey" };

export interface ReportOptions {
  /** Lines placed first (e.g. the sticky comment's hidden marker). */
  preamble?: string[];
  /** Lines placed after the headline (e.g. an override, a candidate-champion note). */
  notes?: string[];
  limit?: number;
}

export function markdownReport(a: Analysis, opts: ReportOptions = {}): string {
  const limit = opts.limit ?? GITHUB_SUMMARY_LIMIT;
  // Per-slice tables are the only part that grows with the run; shrink them until it fits.
  for (const rows of [Infinity, 200, 50, 10, 0]) {
    const text = render(a, opts, rows);
    if (text.length <= limit) return text;
  }
  const text = render(a, opts, 0);
  return text.slice(0, limit - 80) + "\n\n…report truncated to fit GitHub's limit; the full report is in the artifacts.\n";
}

function render(a: Analysis, opts: ReportOptions, maxRows: number): string {
  const h = a.headline;
  const out: string[] = [...(opts.preamble ?? [])];
  out.push(`## perf-gate: ${badge[a.verdict]}${a.blocking ? " — blocking" : a.verdict === "red" ? " — advisory" : ""}`);
  out.push("", `**${quartet(h, a.percentile)}**`, "");
  out.push(verdictSentence(a));
  const costs = a.comparisons.flatMap((c) => resourceChanges(c).map((r) => (a.comparisons.length > 1 ? `${c.key}: ${r}` : r)));
  if (costs.length > 0) out.push("", `**Resources:** the challenger's ${costs.join("; ")}.`);
  if (a.preflight.length > 0) out.push("", preflightWarning(a.preflight));
  if (a.hostBias.length > 0) out.push("", hostBiasWarning(a.hostBias));
  if (opts.notes?.length) out.push("", ...opts.notes);
  for (const c of a.comparisons) out.push("", ...comparisonSection(c, a.percentile, maxRows));
  out.push("", "### Runs", "", "| run | id | workload | rate | started | pairs used | pairs dropped |", "|---|---|---|---:|---|---:|---:|");
  for (const r of a.runs) {
    const dropped = r.disturbed > 0 ? `${r.dropped} (${r.disturbed} disturbed)` : String(r.dropped);
    out.push(`| ${cell(r.name)} | ${cell(r.runId)} | ${cell(r.workload)} | ${r.rate} | ${r.started}${r.partial ? " (partial)" : ""} | ${r.pairs} | ${dropped} |`);
  }
  out.push("", `<sub>Method: ${a.method} Bootstrap seed ${a.seed}.</sub>`, "");
  return out.join("\n");
}

function verdictSentence(a: Analysis): string {
  const h = a.headline;
  const budget = `${a.settings.blockThresholdPercent}% of the ${ms(a.settings.sloBudgetMs)} ms SLO budget`;
  if (a.blocking) {
    const why = h.blockedBy.map((reason) => blockReason(h, reason, budget));
    return `**Blocks the merge:** ${why.join("; and ")}.`;
  }
  if (a.verdict === "red") return `Advisory: a detectable regression below the block threshold of ${ms(h.thresholdMs)} ms (${budget}); it does not block the merge.`;
  if (a.verdict === "green") return "The challenger is faster: a candidate champion.";
  const kind = h.greyKind;
  if (kind === "equivalent") return `No detectable change: the interval lies within ±${ms(h.thresholdMs)} ms, the block threshold.`;
  if (kind === "within floor") {
    return `Within the host's noise floor: the interval ${msInterval(h.ciMs)} excludes 0, but the estimate ${signedMs(h.estimateMs)} ms is inside the host's A/A floor of ±${ms(h.floorMs ?? 0)} ms at ${percentLabel(a.percentile)}, so this host cannot tell it from its own noise. It does not block; a quieter host (a narrower floor) would decide it.`;
  }
  return `Inconclusive: the interval ${msInterval(h.ciMs)} contains 0 but reaches past ±${ms(h.thresholdMs)} ms (the block threshold), so a regression of that size cannot be ruled out. More pairs would narrow it.`;
}

/** Why a comparison blocks, one reason. */
function blockReason(c: Comparison, reason: Comparison["blockedBy"][number], budget: string): string {
  if (reason === "errors") return `the challenger fails more requests than the champion (${c.errorRegression!.challenger} vs ${c.errorRegression!.champion})`;
  if (reason === "cpu") {
    const cpu = c.resources!.cpuUsPerRequest!;
    return `the challenger's CPU per request grew by ${signedPercent(cpu.percent)} (${confidenceLabel(c.confidence)} CI [${signedPercent(cpu.percentCi[0])}, ${signedPercent(cpu.percentCi[1])}]), wholly past the limit of ${signedPercent(c.cpuLimitPercent!)} (resources.block_cpu_percent)`;
  }
  return `the regression exceeds the block threshold of ${ms(c.thresholdMs)} ms (${budget}); ${c.blockingDecisive ? "the whole interval lies beyond it" : "the interval reaches below it, so the regression may be smaller than the threshold"}`;
}

/** What the host's own checks flagged before the runs: the verdict is read with it in mind. */
export function preflightWarning(flags: Analysis["preflight"]): string {
  const list = flags.map((f) => `${f.check}: ${f.detail} (${f.runs.length === 1 ? `run ${f.runs[0]}` : `${f.runs.length} runs`})`).join("; ");
  return `> ⚠️ **The host flagged its own state before measuring**: ${list}. A busy or changed host widens the noise and can bias a verdict; rerun when it is quiet if the verdict matters.`;
}

/** Said on every verdict while the host is biased: the ports differ with identical builds. */
export function hostBiasWarning(bias: Analysis["hostBias"]): string {
  const list = bias.map((b) => `${b.key} ${msInterval(b.ciMs)}`).join(", ");
  return `> ⚠️ **Biased host.** The last A/A calibration found an interval that excludes 0 (${list}): with the same build on both ports, the ports measure differently. Verdicts on this host are suspect until a calibration's interval contains 0 again; check the host (CPU pinning, other load, port-specific settings) and rerun the calibration workflow.`;
}

function comparisonSection(c: Comparison, percentile: number, maxRows: number): string[] {
  const p = percentLabel(percentile);
  const state = c.verdict === "grey" ? `grey (${c.greyKind})` : `${c.verdict}${c.blocking ? ", blocking" : ""}`;
  const pct = (delta: number, base: number) => (base > 0 ? ` (${delta > 0 ? "+" : ""}${((100 * delta) / base).toFixed(1)}%)` : "");
  const ci = (lo: number, hi: number) => `[${signedMs(lo)}, ${signedMs(hi)}]`;
  const out = [
    `### ${c.workload} @ ${c.rate} req/s — ${state}`,
    "",
    `${quartet(c, percentile)}`,
    "",
    `| metric | champion | challenger | delta | ${confidenceLabel(c.confidence)} CI of delta |`,
    "|---|---:|---:|---:|---|",
    `| p50 | ${ms(c.champion.p50Ms)} ms | ${ms(c.challenger.p50Ms)} ms | ${signedMs(c.p50Ms.estimate)} ms${pct(c.p50Ms.estimate, c.champion.p50Ms)} | ${ci(...c.p50Ms.ci)} ms |`,
    `| **${p} (SLO)** | ${ms(c.champion.sloMs)} ms | ${ms(c.challenger.sloMs)} ms | **${signedMs(c.estimateMs)} ms**${pct(c.estimateMs, c.champion.sloMs)} | **${ci(...c.ciMs)} ms** |`,
    ...(percentile === 99.9 ? [] : [`| p99.9 | ${ms(c.champion.p999Ms)} ms | ${ms(c.challenger.p999Ms)} ms | ${signedMs(c.p999Ms.estimate)} ms${pct(c.p999Ms.estimate, c.champion.p999Ms)} | ${ci(...c.p999Ms.ci)} ms |`]),
    `| throughput | ${rps(c.champion.okRps)} req/s | ${rps(c.challenger.okRps)} req/s | ${c.throughput.estimate > 0 ? "+" : ""}${rps(c.throughput.estimate)} req/s (${c.throughput.percent > 0 ? "+" : ""}${c.throughput.percent.toFixed(2)}%) | [${rps(c.throughput.ci[0])}, ${rps(c.throughput.ci[1])}] req/s, paired t p=${pValue(c.throughput.p)} |`,
    `| errors | ${armErrorsCell(c.champion)} | ${armErrorsCell(c.challenger)} | ${c.challenger.errors - c.champion.errors > 0 ? "+" : ""}${c.challenger.errors - c.champion.errors} | |`,
    ...resourceRows(c),
    "",
    `Tests on the ${c.pairs} paired differences at ${p}: paired t = ${c.t.t.toFixed(2)} (df ${c.t.df}), p = ${pValue(c.t.p)}` +
      `${c.t.holmP !== c.t.p ? `, Holm-adjusted p = ${pValue(c.t.holmP)}` : ""}; ` +
      `bootstrap ${confidenceLabel(c.confidence)} CI ${ci(...c.bootstrapCiMs)} ms; ` +
      `sign test ${c.signTest.positive}+/${c.signTest.negative}−, p = ${pValue(c.signTest.p)}; ` +
      `Wilcoxon signed-rank W = ${c.wilcoxon.statistic}, p = ${pValue(c.wilcoxon.p)} (${c.wilcoxon.method}). ` +
      `Block threshold ${ms(c.thresholdMs)} ms.${c.looks > 1 ? ` Look ${c.looks} at this build: ${c.runs.length} runs pooled, interval at ${confidenceLabel(c.confidence)}.` : ""}`,
  ];
  if (c.flags.length > 0) out.push("", ...c.flags.map((f) => `> ⚠️ **${f.code.replace(/_/g, " ")}**: ${f.message}`));
  out.push("", mermaidChart(c, percentile));
  if (maxRows > 0) {
    const rows = c.detail.slice(0, maxRows);
    out.push(
      "",
      `<details><summary>Per-slice ${p} of ${c.detail.length} pairs</summary>`,
      "",
      `| run | pair | champion ${p} | challenger ${p} | difference |`,
      "|---|---:|---:|---:|---:|",
      ...rows.map((r) => `| ${cell(r.run)} | ${r.pair} | ${ms(r.championMs)} ms | ${ms(r.challengerMs)} ms | ${signedMs(r.dMs)} ms |`),
      ...(rows.length < c.detail.length ? [``, `${c.detail.length - rows.length} more pairs in the JSON result.`] : []),
      "",
      "</details>",
    );
  }
  return out;
}

/** "3 of 2700 (5xx 2, timeout 1)": an arm's failures beside its requests, by class. */
function armErrorsCell(arm: ArmSummary): string {
  const classes = errorClasses({ requests: arm.requests, errors: arm.errors, byClass: arm.errorsByClass });
  return `${arm.errors} of ${arm.requests}${classes ? ` (${classes})` : ""}`;
}

function cell(s: string): string {
  return s.replace(/[|\n\r]/g, " ");
}
