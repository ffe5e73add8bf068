// Charts of the paired differences: one bar per pair drawn from 0 (a faster pair below or left of
// it, a slower one above or right), the interval, the A/A floor and the block threshold as
// labelled lines, on round ticks that include 0. Pure.
//
// Markdown gets a text chart in a code block, not Mermaid: GitHub's Mermaid `xychart-beta` draws
// every bar up from the bottom of the plot (BarPlot in mermaid's xychart), so a negative
// difference shows as a positive bar, and its lines carry no labels. A code block renders the
// same in check summaries, comments, job summaries and terminals. The SVG is for the artifacts.
import type { Comparison } from "../analysis/verdict";
import { type Arms, CHAMPION_VS_CHALLENGER } from "./arms";
import { confidenceLabel, ms, msInterval, percentLabel, signedMs } from "./format";
import { type ChartScale, chartScale, tickLabel } from "./scale";

/** Most bars a chart shows; longer runs are shown as means of consecutive pairs. */
export const MAX_BARS = 60;

interface Bar {
  /** "3", or "51-100" for a bin of pairs (1-based, as in the per-pair table). */
  label: string;
  value: number;
}

function bars(d: readonly number[], maxBars = MAX_BARS): { bars: Bar[]; per: number } {
  const per = Math.ceil(d.length / maxBars);
  const out: Bar[] = [];
  for (let i = 0; i < d.length; i += per) {
    const bin = d.slice(i, i + per);
    const last = Math.min(i + per, d.length);
    out.push({
      label: per === 1 ? String(i + 1) : `${i + 1}-${last}`,
      value: bin.reduce((a, b) => a + b, 0) / bin.length,
    });
  }
  return { bars: out, per };
}

function title(c: Comparison, percentile: number, arms: Arms, per: number): string {
  return `${c.workload} @ ${c.rate} req/s: ${arms.difference} at ${percentLabel(percentile)}, ${per === 1 ? "per pair" : `mean of each ${per} pairs`} (ms)`;
}

/** What the lines are, for a legend. */
function marks(c: Comparison, scale: ChartScale): { floor: string | null; threshold: string; interval: string } {
  return {
    floor: scale.floor === null ? null : `A/A floor ±${ms(scale.floor)} ms`,
    threshold: `block threshold ${signedMs(c.thresholdMs)} ms${scale.threshold === null ? " (off the scale)" : ""}`,
    interval: `${estimateName(c)} ${signedMs(c.estimateMs)} ms, ${confidenceLabel(c.confidence)} CI ${msInterval(c.ciMs)}`,
  };
}

/** The pooled estimate is the arms' pooled percentiles' difference, not the bars' mean. */
const estimateName = (c: Comparison) => (c.estimator.kind === "pooled" ? "pooled" : "mean");

const PLOT_COLUMNS = 48;

/** A text chart for Markdown: a row per pair, its bar drawn from the 0 column. */
export function textChart(c: Comparison, percentile: number, arms: Arms = CHAMPION_VS_CHALLENGER): string {
  const { bars: rows, per } = bars(c.detail.map((x) => x.dMs));
  const scale = chartScale(
    rows.map((r) => r.value),
    forArms(c, arms),
  );
  const col = (v: number) => Math.round(((v - scale.min) / (scale.max - scale.min)) * (PLOT_COLUMNS - 1));
  const zero = col(0);
  const nameWidth = Math.max(4, ...rows.map((r) => r.label.length));
  const valueWidth = Math.max(signedMs(c.estimateMs).length, ...rows.map((r) => signedMs(r.value).length));
  const row = (label: string, value: string, plot: string[]) =>
    `${label.padStart(nameWidth)} ${value.padStart(valueWidth)} ${plot.join("")}`;

  const canvas = (): string[] => {
    const line = Array<string>(PLOT_COLUMNS).fill(" ");
    if (scale.floor !== null) for (const v of [-scale.floor, scale.floor]) line[col(v)] = "┆";
    if (scale.threshold !== null) line[col(scale.threshold)] = "┃";
    line[zero] = "│";
    return line;
  };

  // The tick labels, each centred on its column where it does not run into the one before.
  const tickRow = Array<string>(PLOT_COLUMNS + 8).fill(" ");
  const axis = Array<string>(PLOT_COLUMNS).fill("─");
  let free = 0;
  for (const t of scale.ticks) {
    const text = tickLabel(t, scale.decimals);
    const at = Math.max(0, col(t) - Math.floor(text.length / 2));
    axis[col(t)] = t === 0 ? "┼" : "┬";
    if (at < free) continue;
    for (let i = 0; i < text.length; i++) tickRow[at + i] = text[i]!;
    free = at + text.length + 1;
  }

  const out = [
    title(c, percentile, arms, per),
    "",
    row("", "", tickRow),
    row(per === 1 ? "pair" : "pairs", "ms", axis),
  ];
  for (const r of rows) {
    const line = canvas();
    const to = col(r.value);
    for (let i = Math.min(to, zero + 1); i <= Math.max(to, zero - 1); i++) if (i !== zero) line[i] = "█";
    out.push(row(r.label, signedMs(r.value), line));
  }
  const ci = canvas();
  const [lo, hi] = [col(c.ciMs[0]), col(c.ciMs[1])];
  for (let i = lo; i <= hi; i++) ci[i] = "─";
  ci[lo] = "├";
  ci[hi] = "┤";
  ci[col(c.estimateMs)] = "●";
  out.push(row(estimateName(c), signedMs(c.estimateMs), ci));
  const m = marks(c, scale);
  const legend = [
    `│ 0`,
    `├─●─┤ ${m.interval}`,
    ...(m.floor ? [`┆ ${m.floor}`] : []),
    ...(arms.aa ? [] : [`${scale.threshold === null ? "" : "┃ "}${m.threshold}`]),
  ];
  out.push("", legend.slice(0, 2).join("   "), ...(legend.length > 2 ? [legend.slice(2).join("   ")] : []));
  return ["```text", ...out.map((l) => l.trimEnd()), "```"].join("\n");
}

/** An A/A run blocks nothing: its charts leave the block threshold out. */
function forArms(c: Comparison, arms: Arms): Comparison {
  return arms.aa ? { ...c, thresholdMs: 0 } : c;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** The chart as a standalone SVG (chart.svg in the artifacts). */
export function svgChart(c: Comparison, percentile: number, arms: Arms = CHAMPION_VS_CHALLENGER): string {
  const width = 760;
  const height = 340;
  const m = { top: 44, right: 190, bottom: 46, left: 64 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const { bars: rows, per } = bars(c.detail.map((x) => x.dMs));
  const scale = chartScale(
    rows.map((r) => r.value),
    forArms(c, arms),
  );
  const y = (v: number) => m.top + plotH - ((v - scale.min) / (scale.max - scale.min)) * plotH;
  const slot = plotW / Math.max(1, rows.length);
  const color = c.verdict === "red" ? "#cf222e" : c.verdict === "green" ? "#1a7f37" : "#6e7781";
  const f = (v: number) => v.toFixed(1);
  const right = m.left + plotW;

  const grid = scale.ticks
    .map((t) =>
      [
        `<line x1="${m.left}" x2="${right}" y1="${f(y(t))}" y2="${f(y(t))}" stroke="${t === 0 ? "#24292f" : "#d0d7de"}"${t === 0 ? ' stroke-width="1.5"' : ""}/>`,
        `<text x="${m.left - 8}" y="${f(y(t) + 4)}" text-anchor="end">${esc(tickLabel(t, scale.decimals))}</text>`,
      ].join("\n  "),
    )
    .join("\n  ");
  const barRects = rows
    .map((r, i) => {
      const top = Math.min(y(r.value), y(0));
      const h = Math.max(1, Math.abs(y(r.value) - y(0)));
      return `<rect x="${f(m.left + i * slot + slot * 0.2)}" y="${f(top)}" width="${f(slot * 0.6)}" height="${f(h)}" fill="${color}"><title>${per === 1 ? "pair" : "pairs"} ${r.label}: ${signedMs(r.value)} ms</title></rect>`;
    })
    .join("\n  ");
  const everyNth = Math.ceil(rows.length / 15);
  const xLabels = rows
    .map((r, i) =>
      i % everyNth === 0 || i === rows.length - 1
        ? `<text x="${f(m.left + (i + 0.5) * slot)}" y="${m.top + plotH + 16}" text-anchor="middle">${esc(r.label)}</text>`
        : "",
    )
    .filter(Boolean)
    .join("\n  ");

  // Horizontal lines, each labelled in the right margin (nudged apart where they would overlap).
  const mk = marks(c, scale);
  const lines: { v: number; text: string; stroke: string; dash: string }[] = [
    { v: c.estimateMs, text: `${estimateName(c)} ${signedMs(c.estimateMs)} ms`, stroke: color, dash: "6 3" },
    ...(scale.floor === null
      ? []
      : [1, -1].map((sign) => ({
          v: sign * scale.floor!,
          text: `A/A floor ${sign > 0 ? "+" : "−"}${ms(scale.floor!)} ms`,
          stroke: "#8250df",
          dash: "2 3",
        }))),
    ...(scale.threshold === null ? [] : [{ v: scale.threshold, text: mk.threshold, stroke: "#cf222e", dash: "8 3" }]),
  ];
  const placed: number[] = [];
  const labels = [...lines]
    .sort((a, b) => y(a.v) - y(b.v))
    .map((l) => {
      let at = y(l.v) + 4;
      for (const p of placed) if (Math.abs(at - p) < 13) at = p + 13;
      placed.push(at);
      return `<line x1="${m.left}" x2="${right}" y1="${f(y(l.v))}" y2="${f(y(l.v))}" stroke="${l.stroke}" stroke-dasharray="${l.dash}"/>\n  <text x="${right + 6}" y="${f(at)}" fill="${l.stroke}">${esc(l.text)}</text>`;
    })
    .join("\n  ");
  const band = `<rect x="${m.left}" y="${f(y(c.ciMs[1]))}" width="${plotW}" height="${f(Math.max(1, y(c.ciMs[0]) - y(c.ciMs[1])))}" fill="${color}" fill-opacity="0.14"/>`;

  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">
  <title>${esc(title(c, percentile, arms, per))}</title>
  <rect width="100%" height="100%" fill="#ffffff"/>
  <text x="${m.left}" y="20" font-size="14" font-weight="600">${esc(title(c, percentile, arms, per))}</text>
  <text x="${m.left}" y="36" fill="#57606a">${esc(`${confidenceLabel(c.confidence)} CI ${msInterval(c.ciMs)} (band), n=${c.detail.length} pairs${scale.threshold === null && !arms.aa ? `; ${mk.threshold}` : ""}`)}</text>
  ${band}
  ${grid}
  ${barRects}
  ${labels}
  ${xLabels}
  <text x="${m.left + plotW / 2}" y="${height - 8}" text-anchor="middle" fill="#57606a">${per === 1 ? "pair" : `pairs (means of ${per})`}</text>
</svg>
`;
}
