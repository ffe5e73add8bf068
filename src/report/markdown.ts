// The Markdown report: what a check-run summary, a PR comment and a job summary show. Pure,
// and always within GitHub's 65,535-character limit for check summaries. It reads from the top:
// the verdict and its four numbers on the first line, what was compared and where the run is on
// the second, then what the verdict means once, what the builds cost and what the host flagged,
// the numbers per workload and rate with a chart, and the statistics folded away.
import { efficiencySentence } from "../analysis/efficiency";
import { unclear } from "../analysis/extension";
import { errorClasses } from "../analysis/failures";
import { halfWidth } from "../analysis/floors";
import { ESTIMATOR_DESCRIPTION } from "../analysis/latency-estimator";
import type { Analysis, ArmSummary, Comparison, Look } from "../analysis/verdict";
import { type Arms, armsOf } from "./arms";
import { budgetWords } from "./budget";
import { textChart } from "./chart";
import { classesSentence, classesTable } from "./classes";
import { confidenceLabel, mib, ms, msInterval, percentLabel, pValue, rps, signedMs, signedPercent } from "./format";
import { functionsSentence, functionsTable, profiledRuns } from "./functions";
import { blockedByNote } from "./gate-outcome";
import { quartet } from "./quartet";
import { resourceChanges, resourceRows } from "./resources";

export const GITHUB_SUMMARY_LIMIT = 65_535;

const badge: Record<Analysis["verdict"], string> = { green: "🟢 green", red: "🔴 red", grey: "⚪ grey" };

export interface ReportOptions {
  /** Lines placed first (e.g. the sticky comment's hidden marker). */
  preamble?: string[];
  /** Lines placed after the verdict (e.g. an override, a candidate-champion note). */
  notes?: string[];
  /**
   * Whether to show the functions that moved and where the profiles are (default: whenever the
   * runs have them); the gate shows them on a red verdict with the config's profile: on-red.
   */
  functions?: boolean;
  /** The workflow run's page; its artifacts are at #artifacts. The CLI has none. */
  runUrl?: string | null;
  /** The benchmark host that measured it, as the pool names it; a local host has none. */
  host?: string | null;
  limit?: number;
}

export function markdownReport(a: Analysis, opts: ReportOptions = {}): string {
  const limit = opts.limit ?? GITHUB_SUMMARY_LIMIT;
  // Per-pair tables are the only part that grows with the run; shrink them until it fits.
  for (const rows of [Infinity, 200, 50, 10, 0]) {
    const text = render(a, opts, rows);
    if (text.length <= limit) return text;
  }
  const text = render(a, opts, 0);
  return `${text.slice(0, limit - 80)}\n\n…report truncated to fit GitHub's limit; the full report is in the artifacts.\n`;
}

function render(a: Analysis, opts: ReportOptions, maxRows: number): string {
  const arms = armsOf(a);
  const several = a.comparisons.length > 1;
  const out: string[] = [...(opts.preamble ?? [])];
  out.push(
    `### ${headline(a, arms)}`,
    "",
    compared(a, arms, opts.runUrl ?? null, opts.host ?? null),
    "",
    arms.aa ? aaSentence(a, arms) : verdictSentence(a),
  );
  // Where the time went, before what it cost: the classes that moved, then the functions.
  const showFunctions = opts.functions ?? true;
  const runs = profiledRuns(a.comparisons);
  for (const c of a.comparisons) {
    const prefix = several ? ` (${c.key})` : "";
    for (const line of [classesSentence(c, prefix), showFunctions ? functionsSentence(c, prefix, arms, runs) : null])
      if (line) out.push("", line);
  }
  const costs = a.comparisons.flatMap((c) => resourceChanges(c).map((r) => (several ? `${c.key}: ${r}` : r)));
  if (costs.length > 0) out.push("", `**Resources:** the ${arms.challenger}'s ${costs.join("; ")}.`);
  if (a.preflight.length > 0) out.push("", preflightWarning(a.preflight));
  if (a.hostBias.length > 0) out.push("", hostBiasWarning(a.hostBias));
  if (opts.notes?.length) out.push("", ...opts.notes);
  for (const c of a.comparisons)
    out.push("", ...comparisonSection(c, a.percentile, arms, several, maxRows, showFunctions));
  out.push(
    "",
    "<details><summary>Runs and method</summary>",
    "",
    "| run | id | workload | rate | started | pairs used | pairs dropped |",
    "|---|---|---|---:|---|---:|---:|",
    ...a.runs.map((r) => {
      const dropped = r.disturbed > 0 ? `${r.dropped} (${r.disturbed} disturbed)` : String(r.dropped);
      return `| ${tableCell(r.name)} | ${tableCell(r.runId)} | ${tableCell(r.workload)} | ${r.rate} | ${r.started}${r.partial ? " (partial)" : ""} | ${r.pairs} | ${dropped} |`;
    }),
    ...dependencyTable(a),
    "",
    `Method: ${a.method} Bootstrap seed ${a.seed}.`,
    "",
    "</details>",
    "",
  );
  return out.join("\n");
}

/** Each arm's dependencies per run: how soon each was ready, what it used until the arm stopped. */
function dependencyTable(a: Analysis): string[] {
  if (a.dependencies.length === 0) return [];
  return [
    "",
    "Dependencies, each arm's own instance (their CPU and memory are in the arm's figures above too):",
    "",
    "| run | arm | dependency | ready after | CPU used | memory at stop |",
    "|---|---|---|---:|---:|---:|",
    ...a.dependencies.map(
      (d) =>
        `| ${tableCell(d.run)} | ${d.arm} | ${tableCell(d.name)} | ${d.readySeconds.toFixed(2)} s | ${d.cpuSeconds === null ? "—" : `${d.cpuSeconds.toFixed(2)} s`} | ${d.rssBytes === null ? "—" : mib(d.rssBytes)} |`,
    ),
  ];
}

/** The first line: the verdict and its four numbers. */
function headline(a: Analysis, arms: Arms): string {
  const h = a.headline;
  if (arms.aa) {
    const [lo, hi] = h.ciMs;
    return `perf-gate A/A: ${lo <= 0 && hi >= 0 ? "⚪" : "🟠"} ${quartet(h, a.percentile, arms)}`;
  }
  const state = `${badge[a.verdict]}${a.blocking ? `, blocking${blockedByNote(h)}` : a.verdict === "red" ? ", advisory" : ""}`;
  return `perf-gate: ${state} — ${quartet(h, a.percentile)}`;
}

/** The second line: which builds, on which host, and where the run and its files are. */
function compared(a: Analysis, arms: Arms, runUrl: string | null, host: string | null): string {
  const sha = (s: string | undefined) => (s ? `\`${s.slice(0, 7)}\`` : "(unknown)");
  const on = host ? ` on host \`${host}\`` : "";
  const links = runUrl ? ` · [workflow run](${runUrl}) · [report and results](${runUrl}#artifacts)` : "";
  if (arms.aa)
    return `A/A run: champion ${sha(a.builds?.champion_sha)} on both ports (${arms.champion} and ${arms.challenger})${on}${links}`;
  const base = a.builds?.base === "merge-base" ? "merge base" : "champion";
  return `challenger ${sha(a.builds?.challenger_sha)} vs ${base} ${sha(a.builds?.champion_sha)}${on}${links}`;
}

function verdictSentence(a: Analysis): string {
  const h = a.headline;
  const budget = `${a.settings.blockThresholdPercent}% of the ${ms(a.settings.sloBudgetMs)} ms SLO budget`;
  if (a.blocking) {
    const why = h.blockedBy.map((reason) => blockReason(h, reason, budget));
    return `**Blocks the merge:** ${why.join("; and ")}.`;
  }
  if (a.verdict === "red")
    return `Advisory: a detectable regression below the block threshold of ${ms(h.thresholdMs)} ms (${budget}); it does not block the merge.`;
  if (a.verdict === "green")
    return a.builds?.base === "merge-base"
      ? "The challenger is faster than its merge base."
      : "The challenger is faster: a candidate champion.";
  const kind = h.greyKind;
  if (kind === "equivalent")
    return `No detectable change: the interval lies within ±${ms(h.thresholdMs)} ms, the block threshold.`;
  if (kind === "within floor") {
    return `Within the host's noise floor: the interval ${msInterval(h.ciMs)} excludes 0, but the estimate ${signedMs(h.estimateMs)} ms is inside the host's A/A floor of ±${ms(h.floorMs ?? 0)} ms at ${percentLabel(a.percentile)}, so this host cannot tell it from its own noise. It does not block; a quieter host (a narrower floor) would decide it.`;
  }
  return `Inconclusive: the interval ${msInterval(h.ciMs)} contains 0 but reaches past ±${ms(h.thresholdMs)} ms (the block threshold), so a regression of that size cannot be ruled out. More pairs would narrow it.`;
}

/** Why a comparison blocks, one reason. */
function blockReason(c: Comparison, reason: Comparison["blockedBy"][number], budget: string): string {
  if (reason === "budget") {
    return `the regression would take main past its monthly regression budget (${budgetWords(c.budget!)}): advisory reds merge, so the budget keeps what they do to main over 30 days in check`;
  }
  if (reason === "errors")
    return `the challenger fails more requests than the champion (${c.errorRegression!.challenger} vs ${c.errorRegression!.champion})`;
  if (reason === "cpu") {
    const cpu = c.resources!.cpuUsPerRequest!;
    return `the challenger's CPU per request grew by ${signedPercent(cpu.percent)} (${confidenceLabel(c.confidence)} CI [${signedPercent(cpu.percentCi[0])}, ${signedPercent(cpu.percentCi[1])}]), wholly past the limit of ${signedPercent(c.cpuLimitPercent!)} (resources.block_cpu_percent)`;
  }
  return `the regression exceeds the block threshold of ${ms(c.thresholdMs)} ms (${budget}); ${c.blockingDecisive ? "the whole interval lies beyond it" : "the interval reaches below it, so the regression may be smaller than the threshold"}`;
}

/** What the host's own checks flagged before the runs: the verdict is read with it in mind. */
export function preflightWarning(flags: Analysis["preflight"]): string {
  const list = flags
    .map((f) => `${f.check}: ${f.detail} (${f.runs.length === 1 ? `run ${f.runs[0]}` : `${f.runs.length} runs`})`)
    .join("; ");
  return `> ⚠️ **The host flagged its own state before measuring**: ${list}. A busy or changed host widens the noise and can bias a verdict; rerun when it is quiet if the verdict matters.`;
}

/** What an A/A run says: the floor it measured, and whether the ports measure alike. */
function aaSentence(a: Analysis, arms: Arms): string {
  const floors = a.comparisons
    .map(
      (c) =>
        `${c.key} ±${ms(halfWidth(c.ciMs))} ms${c.floorMs === null ? "" : ` (the host's floor before: ±${ms(c.floorMs)} ms)`}`,
    )
    .join(", ");
  const differ = a.comparisons.filter((c) => c.ciMs[0] > 0 || c.ciMs[1] < 0);
  const ports =
    differ.length === 0
      ? "The two ports measure alike with the same build, as they should."
      : `With the same build on both, ${arms.challenger} and ${arms.champion} differ for ${differ.map((c) => c.key).join(", ")}: by chance in 1 run of 20 on a sound host, so calibration measures such a key again before it calls the host biased.`;
  return `The floor is the half-width of the A/A interval: **${floors}**, what calibration records and later verdicts quote. ${ports}`;
}

/** Said on every verdict while the host is biased: the ports differ with identical builds. */
export function hostBiasWarning(bias: Analysis["hostBias"]): string {
  const list = bias.map((b) => `${b.key} ${msInterval(b.ciMs)}`).join(", ");
  return `> ⚠️ **Biased host.** The last A/A calibration found an interval that excludes 0 (${list}): with the same build on both ports, the ports measure differently. Verdicts on this host are suspect until a calibration's interval contains 0 again; check the host (CPU pinning, other load, port-specific settings) and rerun the calibration workflow.`;
}

function comparisonSection(
  c: Comparison,
  percentile: number,
  arms: Arms,
  several: boolean,
  maxRows: number,
  showFunctions: boolean,
): string[] {
  const p = percentLabel(percentile);
  const state = arms.aa
    ? ""
    : ` — ${c.verdict === "grey" ? `grey (${c.greyKind})` : `${c.verdict}${c.blocking ? ", blocking" : ""}`}`;
  const pct = (delta: number, base: number) =>
    base > 0 ? ` (${delta > 0 ? "+" : ""}${((100 * delta) / base).toFixed(1)}%)` : "";
  const ci = (lo: number, hi: number) => `[${signedMs(lo)}, ${signedMs(hi)}]`;
  const out = [`#### ${c.workload} @ ${c.rate} req/s${several ? state : ""}`, ""];
  // With one comparison the first line already said its quartet: say it once.
  if (several) out.push(quartet(c, percentile, arms), "");
  out.push(
    `| metric | ${arms.champion} | ${arms.challenger} | delta | ${confidenceLabel(c.confidence)} CI of delta |`,
    "|---|---:|---:|---:|---|",
    `| p50 | ${ms(c.champion.p50Ms)} ms | ${ms(c.challenger.p50Ms)} ms | ${signedMs(c.p50Ms.estimate)} ms${pct(c.p50Ms.estimate, c.champion.p50Ms)} | ${ci(...c.p50Ms.ci)} ms |`,
    `| **${p} (SLO)** | ${ms(c.champion.sloMs)} ms | ${ms(c.challenger.sloMs)} ms | **${signedMs(c.estimateMs)} ms**${pct(c.estimateMs, c.champion.sloMs)} | **${ci(...c.ciMs)} ms** |`,
    ...(percentile === 99.9
      ? []
      : [
          `| p99.9 | ${ms(c.champion.p999Ms)} ms | ${ms(c.challenger.p999Ms)} ms | ${signedMs(c.p999Ms.estimate)} ms${pct(c.p999Ms.estimate, c.champion.p999Ms)} | ${ci(...c.p999Ms.ci)} ms |`,
        ]),
    `| throughput | ${rps(c.champion.okRps)} req/s | ${rps(c.challenger.okRps)} req/s | ${c.throughput.estimate > 0 ? "+" : ""}${rps(c.throughput.estimate)} req/s (${c.throughput.percent > 0 ? "+" : ""}${c.throughput.percent.toFixed(2)}%) | [${rps(c.throughput.ci[0])}, ${rps(c.throughput.ci[1])}] req/s |`,
    `| errors | ${armErrorsCell(c.champion)} | ${armErrorsCell(c.challenger)} | ${c.challenger.errors - c.champion.errors > 0 ? "+" : ""}${c.challenger.errors - c.champion.errors} | |`,
    ...resourceRows(c),
  );
  out.push("", ...intervalLines(c, p));
  out.push(...classesTable(c, arms), ...(showFunctions ? functionsTable(c, arms) : []));
  if (c.flags.length > 0) out.push("", ...c.flags.map((f) => `> ⚠️ **${f.code.replace(/_/g, " ")}**: ${f.message}`));
  out.push("", textChart(c, percentile, arms));
  const pooled = c.runs.length > 1;
  out.push(
    "",
    `<details><summary>Statistics: the tests, and ${p} of each of the ${c.detail.length} pairs</summary>`,
    "",
    `Tests at ${p}: the interval's t = ${c.t.t.toFixed(2)} (df ${c.t.df}), p = ${pValue(c.t.p)}` +
      `${c.t.holmP !== c.t.p ? `, Holm-adjusted p = ${pValue(c.t.holmP)}` : ""}; ` +
      `on the ${c.pairs} paired differences (${arms.difference}), bootstrap ${confidenceLabel(c.confidence)} CI ${ci(...c.bootstrapCiMs)} ms; ` +
      `sign test ${c.signTest.positive}+/${c.signTest.negative}−, p = ${pValue(c.signTest.p)}; ` +
      `Wilcoxon signed-rank W = ${c.wilcoxon.statistic}, p = ${pValue(c.wilcoxon.p)} (${c.wilcoxon.method}); ` +
      `throughput paired t p = ${pValue(c.throughput.p)}. ` +
      `Block threshold ${ms(c.thresholdMs)} ms.`,
  );
  if (maxRows > 0) {
    // Pairs are numbered 1, 2, … in the order the chart draws them.
    const rows = c.detail.slice(0, maxRows);
    out.push(
      "",
      `| pair | ${pooled ? "run | " : ""}${arms.champion} ${p} | ${arms.challenger} ${p} | difference |`,
      `|---:|${pooled ? "---|" : ""}---:|---:|---:|`,
      ...rows.map(
        (r, i) =>
          `| ${i + 1} | ${pooled ? `${tableCell(r.run)} | ` : ""}${ms(r.championMs)} ms | ${ms(r.challengerMs)} ms | ${signedMs(r.dMs)} ms |`,
      ),
      ...(rows.length < c.detail.length ? ["", `${c.detail.length - rows.length} more pairs in the JSON result.`] : []),
    );
  }
  out.push("", "</details>");
  return out;
}

/** What the SLO interval is of, how near its sampling limit, and each look at this build. */
function intervalLines(c: Comparison, p: string): string[] {
  const how = `${p} interval: ${ESTIMATOR_DESCRIPTION[c.estimator.kind]}${c.estimator.fallback ? ` (${c.estimator.fallback})` : ""}, at ${confidenceLabel(c.confidence)}`;
  const lines = [`${how}${c.efficiency ? `; ${efficiencySentence(c.efficiency)}` : ""}.`];
  if (c.lookHistory.length > 1) {
    const clear = (l: Look) => (unclear(l.ciMs, c.thresholdMs) ? "unclear" : "clear");
    lines.push(
      "",
      `Looks at this build (each run pooled in turn, each at its group-sequential level): ${c.lookHistory
        .map(
          (l) =>
            `${l.look}. ${tableCell(l.run)}, ${l.pairs} pairs: ${signedMs(l.estimateMs)} ms [${signedMs(l.ciMs[0])}, ${signedMs(l.ciMs[1])}] at ${confidenceLabel(l.confidence)}, ${clear(l)}`,
        )
        .join("; ")}.`,
    );
  }
  return lines;
}

/** "3 of 2700 (5xx 2, timeout 1)": an arm's failures beside its requests, by class. */
function armErrorsCell(arm: ArmSummary): string {
  const classes = errorClasses({ requests: arm.requests, errors: arm.errors, byClass: arm.errorsByClass });
  return `${arm.errors} of ${arm.requests}${classes ? ` (${classes})` : ""}`;
}

/** Text in a Markdown table cell: no pipe or line break ends it early. */
export function tableCell(s: string): string {
  return s.replace(/[|\n\r]/g, " ");
}
