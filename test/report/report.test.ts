import { describe, expect, it } from "vitest";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { mermaidChart, svgChart } from "../../src/report/chart";
import { gateOutcome } from "../../src/report/gate-outcome";
import { ms, signedMs } from "../../src/report/format";
import { GITHUB_SUMMARY_LIMIT, markdownReport } from "../../src/report/markdown";
import { quartet } from "../../src/report/quartet";
import { makeResult, pairsFromDiffs } from "../analysis/fixtures";
import ref from "../analysis/reference-values.json";

const karan = () =>
  analyze([{ name: "r.json", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d) }) }], { ...defaultSettings, floorMs: 0.07 });

describe("ms", () => {
  it("keeps sub-millisecond digits, and never signs what rounds to nothing", () => {
    expect([12.345, 0.934, 0.045, 0.07, 0.0123].map(ms)).toEqual(["12.3", "0.93", "0.045", "0.07", "0.012"]);
    expect([-0.0004, 0.0004, -0, 0].map(signedMs)).toEqual(["0.00", "0.00", "0.00", "0.00"]);
    expect([-0.93, 0.93, -0.002].map(signedMs)).toEqual(["-0.93", "+0.93", "-0.002"]);
  });
});

describe("quartet", () => {
  it("states estimate, interval, floor and pairs in the canonical form", () => {
    const [lo, hi] = ref.datasets.karan_faster.ci95 as [number, number];
    expect(quartet(karan().headline, 99)).toBe(
      `challenger is ${Math.abs(ref.datasets.karan_faster.mean).toFixed(2)} ms faster at p99 (95% CI [${lo.toFixed(2)}, ${hi.toFixed(2)}] ms; A/A floor ±0.07 ms; n=10 pairs)`,
    );
  });

  it("says slower for red, and no detectable change for grey, with the floor unknown", () => {
    const red = analyze([{ name: "r", result: makeResult({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]) }) }]);
    expect(quartet(red.headline, 99)).toMatch(/^challenger is 2\.5\d ms slower at p99 \(95% CI \[\+2\.\d\d, \+2\.\d\d\] ms; A\/A floor unknown; n=10 pairs\)$/);
    const grey = analyze([{ name: "r", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) }) }]);
    expect(quartet(grey.headline, 99)).toMatch(/^no detectable change at p99: estimate -0\.\d+ ms \(95% CI/);
  });
});

describe("markdown report", () => {
  it("has the headline, the champion | challenger | delta table, the tests, the chart and the per-slice table", () => {
    const md = markdownReport(karan());
    expect(md).toContain("## perf-gate: 🟢 green");
    expect(md).toContain("| metric | champion | challenger | delta | 95% CI of delta |");
    expect(md).toMatch(/\| \*\*p99 \(SLO\)\*\* \| 10\.0 ms \| 9\.07 ms \| \*\*-0\.93 ms\*\*/);
    expect(md).toMatch(/sign test 0\+\/10−, p = 0\.002/);
    expect(md).toContain("```mermaid\nxychart-beta");
    expect(md).toContain("<details><summary>Per-slice p99 of 10 pairs</summary>");
    expect(md).toContain("candidate champion");
  });

  it("warns of a biased host on every verdict, and the check title says so", () => {
    const a = analyze([{ name: "r.json", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d) }) }], {
      ...defaultSettings, hostBiasMs: { "checkout@50": [0.11, 0.31] },
    });
    expect(a.verdict).toBe("green"); // the bias concerns another workload
    expect(markdownReport(a)).toContain("> ⚠️ **Biased host.** The last A/A calibration found an interval that excludes 0 (checkout@50 [+0.11, +0.31] ms)");
    expect(gateOutcome(a).title).toMatch(/ \(biased host: see the report\)$/);
    expect(markdownReport(karan())).not.toContain("Biased host");
  });

  it("stays within GitHub's 65,535 characters however many pairs", () => {
    const many = Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 0.5);
    const a = analyze(
      [500, 1000, 1500].map((rate) => ({ name: `r${rate}.json`, result: makeResult({ pairs: pairsFromDiffs(many), rate }) })),
      defaultSettings,
    );
    const md = markdownReport(a);
    expect(md.length).toBeLessThanOrEqual(GITHUB_SUMMARY_LIMIT);
    expect(md).toContain("more pairs in the JSON result");
    expect(md.split("```mermaid").length - 1).toBe(3);
    expect(md).toContain('x-axis "pairs (×50)"');
  });
});

describe("charts", () => {
  it("Mermaid xychart: one bar per pair and the interval as lines", () => {
    const chart = mermaidChart(karan().headline, 99);
    expect(chart).toMatch(/x-axis "pair" \[1, 2, 3, 4, 5, 6, 7, 8, 9, 10\]/);
    expect(chart.match(/^ {2}bar \[/gm)).toHaveLength(1);
    expect(chart.match(/^ {2}line \[/gm)).toHaveLength(3);
  });

  it("SVG: a bar per pair, the band, well-formed tags", () => {
    const svg = svgChart(karan().headline, 99);
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true);
    expect(svg.match(/<rect /g)).toHaveLength(12); // background, band, 10 bars
    expect(svg.match(/<[a-z]+[ >]/g)!.length - svg.match(/\/>/g)!.length).toBe(svg.match(/<\/[a-z]+>/g)!.length);
  });
});
