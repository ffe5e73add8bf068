// Charts of the paired differences with the interval band: a Mermaid xychart that GitHub
// renders in comments and check summaries, and a standalone SVG for artifacts.
import type { Comparison } from "../analysis/verdict";
import { ms, msInterval, percentLabel, signedMs } from "./format";

const round = (x: number) => Number(x.toFixed(4));

/** Most bars a chart shows; longer runs are shown as means of consecutive pairs. */
export const MAX_BARS = 60;

function binned(d: readonly number[]): { values: number[]; per: number } {
  const per = Math.ceil(d.length / MAX_BARS);
  const values: number[] = [];
  for (let i = 0; i < d.length; i += per) {
    const bin = d.slice(i, i + per);
    values.push(bin.reduce((a, b) => a + b, 0) / bin.length);
  }
  return { values, per };
}

export function mermaidChart(c: Comparison, percentile: number): string {
  const { values, per } = binned(c.detail.map((x) => x.dMs));
  const n = values.length;
  const d = values.map(round);
  const lo = round(c.ciMs[0]);
  const hi = round(c.ciMs[1]);
  const min = Math.min(0, lo, ...d);
  const max = Math.max(0, hi, ...d);
  const pad = (max - min) * 0.1 || 0.01;
  const flat = (v: number) => `[${Array(n).fill(v).join(", ")}]`;
  return [
    "```mermaid",
    "xychart-beta",
    `  title "${c.key}: challenger − champion at ${percentLabel(percentile)}, ${per === 1 ? "per pair" : `mean of each ${per} pairs`} (ms); lines: CI ${signedMs(c.ciMs[0])} to ${signedMs(c.ciMs[1])}, and 0"`,
    `  x-axis "${per === 1 ? "pair" : `pairs (×${per})`}" [${d.map((_, i) => i * per + 1).join(", ")}]`,
    `  y-axis "ms" ${round(min - pad)} --> ${round(max + pad)}`,
    `  bar [${d.join(", ")}]`,
    `  line ${flat(lo)}`,
    `  line ${flat(hi)}`,
    `  line ${flat(0)}`,
    "```",
  ].join("\n");
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function svgChart(c: Comparison, percentile: number): string {
  const width = 720;
  const height = 320;
  const m = { top: 40, right: 20, bottom: 40, left: 70 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const { values: d, per } = binned(c.detail.map((x) => x.dMs));
  const min = Math.min(0, c.ciMs[0], ...d);
  const max = Math.max(0, c.ciMs[1], ...d);
  const pad = (max - min) * 0.1 || 0.01;
  const y0 = min - pad;
  const y1 = max + pad;
  const y = (v: number) => m.top + plotH - ((v - y0) / (y1 - y0)) * plotH;
  const slot = plotW / Math.max(1, d.length);
  const color = c.verdict === "red" ? "#cf222e" : c.verdict === "green" ? "#1a7f37" : "#6e7781";
  const bars = d
    .map((v, i) => {
      const top = Math.min(y(v), y(0));
      const h = Math.max(1, Math.abs(y(v) - y(0)));
      return `<rect x="${(m.left + i * slot + slot * 0.2).toFixed(1)}" y="${top.toFixed(1)}" width="${(slot * 0.6).toFixed(1)}" height="${h.toFixed(1)}" fill="${color}"><title>${per === 1 ? `pair ${i + 1}` : `pairs ${i * per + 1}-${(i + 1) * per}`}: ${signedMs(v)} ms</title></rect>`;
    })
    .join("\n  ");
  const ticks = Array.from({ length: 5 }, (_, i) => y0 + ((y1 - y0) * i) / 4)
    .map((v) => `<text x="${m.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${esc(ms(v))}</text>`)
    .join("\n  ");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">
  <title>${esc(`${c.key}: paired differences at ${percentLabel(percentile)}`)}</title>
  <rect width="100%" height="100%" fill="#ffffff"/>
  <text x="${width / 2}" y="22" text-anchor="middle" font-size="14">${esc(`${c.key}: challenger − champion at ${percentLabel(percentile)} per pair (ms)`)}</text>
  <rect x="${m.left}" y="${y(c.ciMs[1]).toFixed(1)}" width="${plotW}" height="${Math.max(1, y(c.ciMs[0]) - y(c.ciMs[1])).toFixed(1)}" fill="${color}" fill-opacity="0.15"/>
  <line x1="${m.left}" x2="${m.left + plotW}" y1="${y(0).toFixed(1)}" y2="${y(0).toFixed(1)}" stroke="#24292f"/>
  <line x1="${m.left}" x2="${m.left + plotW}" y1="${y(c.estimateMs).toFixed(1)}" y2="${y(c.estimateMs).toFixed(1)}" stroke="${color}" stroke-dasharray="6 4"/>
  ${bars}
  ${ticks}
  <text x="${m.left + plotW}" y="${height - 12}" text-anchor="end">${esc(`mean ${signedMs(c.estimateMs)} ms, CI ${msInterval(c.ciMs)} (band), n=${c.detail.length} pairs`)}</text>
</svg>
`;
}
