// The history page: one self-contained HTML file (docs/design/0025-history-page.md) with main's
// performance over time per workload, rate and percentile (the steps its promotions took, the
// drift measured against ancestors, every gate, the floors, the regression budget), every
// promotion with its pull request, and the change points no single promotion crossed the
// threshold for. uPlot and the page's script are inlined; a Content-Security-Policy forbids
// every request, so the page needs no server and no network at view time. Pure.

import uplotJs from "uplot/dist/uPlot.iife.min.js?raw";
import uplotCss from "uplot/dist/uPlot.min.css?raw";
import {
  type ChangePoint,
  driftPoints,
  historyChangePoints,
  historyKeys,
  mainChange,
  mainSteps,
} from "../analysis/main-history";
import type { GateRecord, History, HistoryEntry } from "../contract/history";
import { comparisonKey } from "../contract/rules";
import { changePointLine } from "./drift";
import { ms, msInterval, signedMs } from "./format";
import script from "./history-page.client.js?raw";
import { keySeries } from "./history-series";

export interface PageOptions {
  /** owner/name on GitHub, for pull request links when the gates' own links do not say. */
  repository?: string;
  /** Where the history came from (a host, a file), said under the title. */
  source: string;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
/** JSON inside a <script> element: nothing in it can close the element or open a comment. */
const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}%`;
const when = (iso: string) => escapeHtml(new Date(Date.parse(iso)).toISOString().slice(0, 16).replace("T", " "));
const short = (sha: string) => `<code>${escapeHtml(sha.slice(0, 7))}</code>`;

/**
 * The repository's address, from the gates' workflow links (https://SERVER/owner/name/actions/runs/N,
 * on github.com or a GitHub Enterprise server), else github.com and the option.
 */
function repositoryUrl(h: History, o: PageOptions): string | null {
  for (const e of h.entries) {
    const m = /^(https:\/\/[A-Za-z0-9.-]+(?::\d+)?\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+)\/actions\/runs\//.exec(
      e.gate?.url ?? e.change?.step?.gate.url ?? "",
    );
    if (m) return m[1]!;
  }
  return o.repository && /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(o.repository)
    ? `https://github.com/${o.repository}`
    : null;
}

function pullLink(pr: number | undefined, repo: string | null): string {
  if (!pr) return "—";
  return repo ? `<a href="${escapeHtml(`${repo}/pull/${pr}`)}">#${pr}</a>` : `#${pr}`;
}

const VERDICT = { red: "● red", green: "● green", grey: "○ grey" } as const;

function verdictCell(c: { verdict: keyof typeof VERDICT; blocking: boolean; blocked_by?: readonly string[] }): string {
  const blocked = c.blocking
    ? `, blocking${c.blocked_by?.some((r) => r !== "latency") ? ` (${c.blocked_by.join(", ")})` : ""}`
    : c.verdict === "red"
      ? ", advisory"
      : "";
  return `<span class="v-${c.verdict}">${VERDICT[c.verdict]}${blocked}</span>`;
}

/** Every promotion and rollback, with the step each took per key. */
function promotionsTable(
  h: History,
  keys: readonly { key: string; percentile: number }[],
  repo: string | null,
): string {
  const changes = h.entries.filter(
    (e): e is HistoryEntry & { change: NonNullable<HistoryEntry["change"]> } => e.change !== undefined,
  );
  const rows = changes.map((e) => {
    const c = e.change;
    const gate = c.step?.gate;
    const steps = keys.map(({ key, percentile }) => {
      const cmp =
        gate?.percentile === percentile
          ? gate.comparisons.find((x) => comparisonKey(x.workload, x.rate) === key)
          : undefined;
      if (!cmp) return "";
      return `<div data-key="${escapeHtml(key)}" data-estimate="${cmp.estimate_ms}">${escapeHtml(key)} p${percentile}: ${verdictCell(cmp)} <span class="num">${escapeHtml(signedMs(cmp.estimate_ms))} ms</span> ${escapeHtml(msInterval(cmp.ci_ms))} (${pct((100 * cmp.estimate_ms) / cmp.champion_ms)})</div>`;
    });
    const step =
      e.kind === "rollback"
        ? `rolled back from ${short(c.previous ?? "")}`
        : gate
          ? steps.join("")
          : "no gate of it on this host";
    const runLink = gate?.url ? ` <a href="${escapeHtml(gate.url)}">gate run</a>` : "";
    return `<tr class="change" data-kind="${e.kind}" data-sha="${escapeHtml(c.sha)}" data-pr="${c.pull_request ?? gate?.pull_request ?? ""}"><td>${when(e.time)}</td><td>${e.kind}</td><td>${short(c.sha)}</td><td>${c.previous ? short(c.previous) : "—"}</td><td>${pullLink(c.pull_request ?? gate?.pull_request, repo)}${runLink}</td><td>${step}</td></tr>`;
  });
  return `<table class="data" id="promotions"><thead><tr><th>when</th><th></th><th>champion</th><th>before</th><th>pull request</th><th>the step main took (the pull request's last gate)</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** The gates of one key, newest first. */
function gatesTable(h: History, key: string, percentile: number, repo: string | null): string {
  const rows = h.entries.flatMap((e) => {
    const g: GateRecord | undefined = e.gate;
    const c =
      g?.percentile === percentile ? g.comparisons.find((x) => comparisonKey(x.workload, x.rate) === key) : undefined;
    if (!g || !c) return [];
    const budget = c.budget
      ? `${pct(c.budget.change_percent)} on ${pct(c.budget.main_percent)} of ${c.budget.limit_percent}%`
      : "—";
    return [
      `<tr class="gate" data-run="${escapeHtml(e.run_id ?? "")}" data-estimate="${c.estimate_ms}"><td>${when(e.time)}</td><td>${pullLink(g.pull_request, repo)}</td><td>${short(g.challenger_sha)}</td><td>${verdictCell(c)}</td><td class="num">${escapeHtml(signedMs(c.estimate_ms))} ms</td><td>${escapeHtml(msInterval(c.ci_ms))}</td><td class="num">${c.floor_ms === undefined ? "—" : `±${escapeHtml(ms(c.floor_ms))} ms`}</td><td class="num">${c.pairs}</td><td>${budget}</td></tr>`,
    ];
  });
  return `<table class="data gates"><thead><tr><th>when</th><th>pull request</th><th>head</th><th>verdict</th><th>estimate</th><th>95% CI</th><th>floor</th><th>pairs</th><th>budget: change on main of limit</th></tr></thead><tbody>${rows.reverse().join("")}</tbody></table>`;
}

/** The drift runs of one key: measured, against the steps in between. */
function driftTable(h: History, key: string, percentile: number): string {
  const points = driftPoints(h, key, percentile);
  if (points.length === 0)
    return `<p class="none">No drift run yet: the calibration runs the champion against the champion of 30 or more days before, once the host keeps one.</p>`;
  const rows = points.map(
    (d) =>
      `<tr class="drift" data-run="${escapeHtml(d.runId ?? "")}" data-estimate="${d.record.estimate_ms}"><td>${when(new Date(d.time).toISOString())}</td><td>${short(d.record.ancestor_sha)}${d.ancestorSince === null ? "" : ` (${when(new Date(d.ancestorSince).toISOString())})`}</td><td class="num">${escapeHtml(signedMs(d.record.estimate_ms))} ms</td><td>${escapeHtml(msInterval(d.record.ci_ms))}</td><td class="num">${pct(d.percent)}</td><td class="num">${d.steps.length}</td><td class="num">${pct(d.stepsPercent)}</td></tr>`,
  );
  return `<table class="data drifts"><thead><tr><th>when</th><th>ancestor (promoted)</th><th>measured drift</th><th>95% CI</th><th>% of its level</th><th>steps between</th><th>together</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function changePointsBox(points: readonly ChangePoint[]): string {
  if (points.length === 0) return "";
  return `<section class="callout" id="change-points"><h2>⚠️ Change points</h2><p>Runs of advisory reds merged one after another: each passed below the block threshold, together they moved main past it.</p><ul>${points.map((c) => `<li data-key="${escapeHtml(c.key)}">${escapeHtml(changePointLine(c))}</li>`).join("")}</ul></section>`;
}

const STYLE = `
:root { --red: #cf222e; --green: #1a7f37; --grey: #6e7781; --accent: #0969da; --drift: #8250df; --floor: #bf8700; font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328; }
body { max-width: 1200px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: 0.2em; } .sub { color: #59636e; margin-top: 0; }
table.data { border-collapse: collapse; width: 100%; font-size: 0.9em; margin: 0.5em 0 1.5em; } .data th, .data td { border: 1px solid #d1d9e0; padding: 4px 8px; text-align: left; vertical-align: top; } .data th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } code { font-size: 0.95em; }
.v-red { color: var(--red); } .v-green { color: var(--green); } .v-grey { color: var(--grey); }
.callout { border: 1px solid #d4a72c; background: #fff8c5; padding: 0.5em 1em; border-radius: 6px; } .callout h2 { border: 0; margin: 0.3em 0; }
.summary { display: flex; gap: 2em; flex-wrap: wrap; } .summary div { background: #f6f8fa; border-radius: 6px; padding: 0.4em 0.8em; }
.chart { position: relative; margin: 1em 0; } .tip { position: absolute; display: none; z-index: 10; pointer-events: none; background: #1f2328; color: #fff; padding: 4px 8px; border-radius: 4px; font-size: 12px; max-width: 480px; }
.budget-past { color: var(--red); font-weight: 600; } .none { color: #59636e; }
`;

/** The page for a history. */
export function historyPage(h: History, o: PageOptions): string {
  const keys = historyKeys(h);
  const repo = repositoryUrl(h, o);
  const now = Date.parse(h.time);
  const count = (kind: HistoryEntry["kind"]) => h.entries.filter((e) => e.kind === kind).length;
  const changes = historyChangePoints(h);
  const sections = keys.map(({ key, percentile }) => {
    const s = keySeries(h, key, percentile);
    const main = mainChange(h, key, percentile, now);
    const limit = s.budget.limitPercent;
    const state =
      limit === null
        ? "no budget set (budget.percent_per_30_days)"
        : main.percent > limit
          ? `<span class="budget-past">past its budget of ${limit}%</span>`
          : `within its budget of ${limit}%`;
    const promotions = mainSteps(h.entries, key, percentile).filter((x) => x.kind === "promotion").length;
    return `<section class="key" id="key-${s.id}">
<h2>${escapeHtml(key.replace("@", " @ "))} req/s, p${percentile}</h2>
<div class="summary"><div>main over the last 30 days: <b class="main-change" data-percent="${main.percent}">${pct(main.percent)}</b>, ${state}</div><div>${promotions} promotions, ${s.gates.labels.filter((l) => l && !l.includes("A/A floor")).length} gates, ${driftPoints(h, key, percentile).length} drift runs</div></div>
<div class="chart" id="level-${s.id}" data-key="${s.id}"></div>
<div class="chart" id="gates-${s.id}" data-key="${s.id}"></div>
<div class="chart" id="budget-${s.id}" data-key="${s.id}"></div>
<h3>Drift runs</h3>${driftTable(h, key, percentile)}
<details><summary>Every gate (${escapeHtml(key)}, p${percentile})</summary>${gatesTable(h, key, percentile, repo)}</details>
</section>`;
  });
  const data = { keys: keys.map(({ key, percentile }) => keySeries(h, key, percentile)) };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>perf-gate: main over time</title>
<style>${uplotCss}${STYLE}</style></head>
<body>
<h1>perf-gate: main over time</h1>
<p class="sub">${escapeHtml(o.source)} · champion ${h.champion ? short(h.champion) : "none"} · as of ${when(h.time)} UTC · ${count("gate")} gates, ${count("promotion")} promotions, ${count("rollback")} rollbacks, ${count("drift")} drift runs, ${count("calibration")} calibrations${h.dropped > 0 ? ` · the ${h.dropped} oldest entries were dropped to keep the history within ${Math.round(h.bound_bytes / (1 << 20))} MiB` : ""}</p>
<p>Drag across a chart to zoom, double-click to zoom out; hover for the numbers. Percents are of main's latency at the percentile; a step is the promoted pull request's last gate (a grey's estimate counts as 0).</p>
${changePointsBox(changes)}
<h2>Promotions</h2>
${promotionsTable(h, keys, repo)}
${sections.join("\n")}
<script type="application/json" id="chart-data">${scriptJson(data)}</script>
<script type="application/json" id="history">${scriptJson(h)}</script>
<script>${uplotJs}</script>
<script>${script}</script>
</body></html>
`;
}
