import { describe, expect, it } from "vitest";
import { analyze } from "../../src/analysis/verdict";
import { armsOf } from "../../src/report/arms";
import { svgChart, textChart } from "../../src/report/chart";
import { ms, signedMs } from "../../src/report/format";
import { gateOutcome } from "../../src/report/gate-outcome";
import { analysisJson } from "../../src/report/json";
import { GITHUB_SUMMARY_LIMIT, markdownReport } from "../../src/report/markdown";
import { candidateNote } from "../../src/report/notes";
import { quartet } from "../../src/report/quartet";
import { chartScale, niceTicks } from "../../src/report/scale";
import { firstLookAt95, makeResult, pairsFromDiffs } from "../analysis/fixtures";
import ref from "../analysis/reference-values.json";

const CHAMPION = "89bd5b9a70b8d6bf7ac4784b9030a3291bb3cb6a";
const CHALLENGER = "02711bd6a8e918b1c6903a5122de830e56b86ecc";
const karan = () =>
  analyze(
    [
      {
        name: "r.json",
        result: makeResult({
          pairs: pairsFromDiffs(ref.datasets.karan_faster.d),
          builds: { kind: "ab", champion_sha: CHAMPION, challenger_sha: CHALLENGER },
        }),
      },
    ],
    { ...firstLookAt95, floorMs: 0.07 },
  );

/** An A/A run as the host records it: the champion on both ports. */
function aaRun(d: number[]) {
  const result = makeResult({
    pairs: pairsFromDiffs(d),
    builds: { kind: "aa", champion_sha: CHAMPION, challenger_sha: CHAMPION },
  });
  return analyze([{ name: "aa.json", result }], { ...firstLookAt95, floorMs: 0.09 });
}

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
    const red = analyze([
      {
        name: "r",
        result: makeResult({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]) }),
      },
    ]);
    expect(quartet(red.headline, 99)).toMatch(
      /^challenger is 2\.5\d ms slower at p99 \(97\.5% CI \[\+2\.\d\d, \+2\.\d\d\] ms; A\/A floor unknown; n=10 pairs\)$/,
    );
    const grey = analyze([{ name: "r", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) }) }]);
    expect(quartet(grey.headline, 99)).toMatch(/^no detectable change at p99: estimate -0\.\d+ ms \(97\.5% CI/);
  });
});

describe("markdown report", () => {
  const RUN = "https://github.com/Codertocat/Hello-World/actions/runs/42";

  it("says the verdict and its quartet first, then what was compared with links, and the summary once", () => {
    const a = karan();
    const md = markdownReport(a, { runUrl: RUN });
    const lines = md.split("\n");
    expect(lines[0]).toBe(`### perf-gate: 🟢 green — ${quartet(a.headline, 99)}`);
    expect(lines[2]).toBe(
      `challenger \`02711bd\` vs champion \`89bd5b9\` · [workflow run](${RUN}) · [report and results](${RUN}#artifacts)`,
    );
    expect(lines[4]).toBe("The challenger is faster: a candidate champion.");
    expect(md.split(quartet(a.headline, 99)).length - 1).toBe(1);
    expect(md.split("The challenger is faster").length - 1).toBe(1);
    expect(markdownReport(a)).toContain("challenger `02711bd` vs champion `89bd5b9`\n"); // no links without a run
  });

  it("names the host that measured it, in the report and in analysis.json", () => {
    const a = karan();
    expect(markdownReport(a, { runUrl: RUN, host: "bench-2.example:2222" }).split("\n")[2]).toBe(
      `challenger \`02711bd\` vs champion \`89bd5b9\` on host \`bench-2.example:2222\` · [workflow run](${RUN}) · [report and results](${RUN}#artifacts)`,
    );
    expect(analysisJson(a, "bench-2.example:2222").host).toBe("bench-2.example:2222");
    expect(analysisJson(a).host).toBeNull();
  });

  it("names the merge base as what the challenger was compared with when the champion arm ran it (comparison_base)", () => {
    const result = makeResult({
      pairs: pairsFromDiffs(ref.datasets.karan_faster.d),
      builds: { kind: "ab", champion_sha: CHAMPION, challenger_sha: CHALLENGER, base: "merge-base" },
    });
    const a = analyze([{ name: "r.json", result }], { ...firstLookAt95, floorMs: 0.07 });
    const md = markdownReport(a);
    expect(md).toContain("challenger `02711bd` vs merge base `89bd5b9`\n");
    expect(md).toContain("The challenger is faster than its merge base.");
    expect(md).not.toContain("candidate champion");
    expect(candidateNote(a, CHALLENGER, "1".repeat(40))).toEqual([]);
  });

  it("keeps the table and the chart in view and folds the statistics, numbering pairs from 1 as the chart does", () => {
    const md = markdownReport(karan());
    expect(md).toContain("| metric | champion | challenger | delta | 95% CI of delta |");
    expect(md).toMatch(/\| \*\*p99 \(SLO\)\*\* \| 10\.0 ms \| 9\.07 ms \| \*\*-0\.93 ms\*\*/);
    expect(md).not.toContain("mermaid");
    const details = md.slice(md.indexOf("<details><summary>Statistics"), md.indexOf("</details>"));
    expect(details).toMatch(/sign test 0\+\/10−, p = 0\.002/);
    expect(md.indexOf("sign test")).toBeGreaterThan(md.indexOf("<details><summary>Statistics"));
    const tableRows = [...details.matchAll(/^\| (\d+) \| [\d.]+ ms \|/gm)].map((m) => Number(m[1]));
    expect(tableRows).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const chartRows = [...md.matchAll(/^ +(\d+) +[+-][\d.]+ /gm)].map((m) => Number(m[1]));
    expect(chartRows).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("an A/A report says it is one, names the ports, never champion | challenger, and shows the floor it measured", () => {
    const a = aaRun(ref.datasets.null_noise.d);
    const md = markdownReport(a);
    const [lo, hi] = a.headline.ciMs;
    const floor = ms((hi - lo) / 2);
    expect(md.split("\n")[0]).toMatch(
      new RegExp(
        `^### perf-gate A/A: ⚪ no detectable difference between the ports at p99: estimate -0\\.\\d+ ms \\(95% CI \\[.*\\] ms; floor ±${floor.replace(".", "\\.")} ms; n=\\d+ pairs\\)$`,
      ),
    );
    expect(md).toContain("A/A run: champion `89bd5b9` on both ports (port :8001 and port :8002)");
    expect(md).toContain(`**default@1000 ±${floor} ms (the host's floor before: ±0.09 ms)**`);
    expect(md).toContain("| metric | port :8001 | port :8002 | delta |");
    expect(md).toContain("port :8002 − port :8001 at p99");
    expect(md).not.toMatch(
      /champion \| challenger|challenger − champion|Blocks the merge|candidate champion|block threshold/,
    );
  });

  it("lists each arm's dependencies per run, as the host recorded them, and nothing without any", () => {
    const started = {
      sha: CHAMPION,
      ports: { PORT: 8001 },
      state_dir: "/s",
      state: "fresh",
      started: "2026-01-01T00:00:00Z",
      healthy_seconds: 0.2,
    };
    const redis = (port: number, cpu: number) => ({
      name: "redis",
      ports: { PORT_REDIS: port },
      ready_seconds: 0.031,
      cpu_seconds: cpu,
      rss_bytes: 9_437_184,
    });
    const result = {
      ...makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) }),
      arms: {
        challenger: { ...started, dependencies: [redis(38002, 0.48)] },
        champion: { ...started, dependencies: [redis(38001, 0.51)] },
      },
    };
    const md = markdownReport(analyze([{ name: "run-1.json", result }]));
    expect(md).toContain(
      "Dependencies, each arm's own instance (their CPU and memory are in the arm's figures above too):",
    );
    expect(md).toContain(
      "| run-1.json | champion | redis | 0.03 s | 0.51 s | 9.0 MiB |\n| run-1.json | challenger | redis | 0.03 s | 0.48 s | 9.0 MiB |",
    );
    expect(markdownReport(karan())).not.toContain("Dependencies");
  });

  it("warns of a biased host on every verdict, and the check title says so", () => {
    const a = analyze(
      [{ name: "r.json", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d) }) }],
      {
        ...firstLookAt95,
        hostBiasMs: { "checkout@50": [0.11, 0.31] },
      },
    );
    expect(a.verdict).toBe("green"); // the bias concerns another workload
    expect(markdownReport(a)).toContain(
      "> ⚠️ **Biased host.** The last A/A calibration found an interval that excludes 0 (checkout@50 [+0.11, +0.31] ms)",
    );
    expect(gateOutcome(a).title).toMatch(/ \(biased host: see the report\)$/);
    expect(markdownReport(karan())).not.toContain("Biased host");
  });

  it("stays within GitHub's 65,535 characters however many pairs, each comparison with its own quartet", () => {
    const many = Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 0.5);
    const a = analyze(
      [500, 1000, 1500].map((rate) => ({
        name: `r${rate}.json`,
        result: makeResult({ pairs: pairsFromDiffs(many), rate }),
      })),
      firstLookAt95,
    );
    const md = markdownReport(a);
    expect(md.length).toBeLessThanOrEqual(GITHUB_SUMMARY_LIMIT);
    expect(md).toContain("more pairs in the JSON result");
    expect(md.split("```text").length - 1).toBe(3);
    expect(md).toContain("mean of each 50 pairs");
    expect(md).toMatch(/^ *2951-3000 +[+-]/m);
    for (const c of a.comparisons) expect(md).toContain(`\n${quartet(c, 99)}\n`);
  });
});

describe("axis ticks", () => {
  const round = (step: number) => {
    const m = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
    return [1, 2, 5].some((k) => Math.abs(m - k) < 1e-9);
  };

  it("are multiples of a 1-2-5 step, cover the range, and include 0", () => {
    for (const [lo, hi] of [
      [-0.13, 0.41],
      [14.4, 32.3],
      [-0.002, 0.0007],
      [-3, -1],
      [0, 0],
      [-250, 1300],
      [0.0449, 0.0451],
    ] as const) {
      const { ticks, step } = niceTicks(Math.min(lo, 0), Math.max(hi, 0));
      expect(round(step), `${lo}..${hi}: step ${step}`).toBe(true);
      expect(ticks, `${lo}..${hi}`).toContain(0);
      expect(ticks[0]!).toBeLessThanOrEqual(Math.min(lo, 0));
      expect(ticks.at(-1)!).toBeGreaterThanOrEqual(Math.max(hi, 0));
      for (const t of ticks)
        expect(Math.abs(t / step - Math.round(t / step)), `${t} on a ${step} grid`).toBeLessThan(1e-9);
      expect(ticks.length).toBeLessThanOrEqual(12);
    }
    // The odd ticks (32.3 / 23.3 / 14.4): now 0, 10, 20, 30, 40.
    expect(niceTicks(0, 32.3).ticks).toEqual([0, 10, 20, 30, 40]);
  });

  it("take in the floor both ways and the threshold when it is near, and say when it is not", () => {
    const near = chartScale([0.5, 0.7], { ciMs: [0.55, 0.75], floorMs: 0.1, thresholdMs: 0.2 });
    expect([near.threshold, near.floor]).toEqual([0.2, 0.1]);
    expect(near.min).toBeLessThanOrEqual(-0.1);
    const far = chartScale([0.01, -0.02], { ciMs: [-0.03, 0.02], floorMs: null, thresholdMs: 2 });
    expect(far.threshold).toBeNull();
    expect(far.max).toBeLessThan(0.1);
  });
});

describe("charts", () => {
  const mixed = () =>
    analyze([{ name: "r", result: makeResult({ pairs: pairsFromDiffs([0.4, -0.3, 0.25, 0.5, -0.1, 0.35]) }) }], {
      ...firstLookAt95,
      sloBudgetMs: 20,
      floorMs: 0.12,
    });

  it("text: a negative difference is drawn left of 0, a positive one right of it, with the lines labelled", () => {
    const chart = textChart(mixed().headline, 99);
    const lines = chart.split("\n");
    expect(lines[0]).toBe("```text");
    expect(lines[1]).toBe("default @ 1000 req/s: challenger − champion at p99, per pair (ms)");
    const zeroAt = (l: string) => (l.indexOf("│") >= 0 ? l.indexOf("│") : l.indexOf("┼"));
    const axis = lines.find((l) => l.startsWith("pair"))!;
    const row = (n: number) => lines.find((l) => new RegExp(`^ +${n} `).test(l))!;
    const zero = zeroAt(axis);
    expect(zeroAt(row(2))).toBe(zero);
    expect(row(2).lastIndexOf("█")).toBeLessThan(zero); // -0.30: left of 0
    expect(row(2).indexOf("█", zero)).toBe(-1);
    expect(row(1).indexOf("█")).toBeGreaterThan(zero); // +0.40: right of 0
    expect(chart).toContain("├─●─┤ mean +0.18 ms, 95% CI [");
    expect(chart).toContain("┆ A/A floor ±0.12 ms");
    expect(chart).toContain("┃ block threshold +0.20 ms");
  });

  it("SVG: a negative difference is drawn below 0, on round ticks that include 0, with the band, floor and threshold labelled", () => {
    const svg = svgChart(mixed().headline, 99);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<[a-z]+[ >]/g)!.length - svg.match(/\/>/g)!.length).toBe(svg.match(/<\/[a-z]+>/g)!.length);
    const ticks = [...svg.matchAll(/<text x="\d+(?:\.\d)?" y="([\d.]+)" text-anchor="end">([^<]+)<\/text>/g)].map(
      (m) => ({ y: Number(m[1]) - 4, label: m[2]! }),
    );
    expect(ticks.map((t) => t.label)).toContain("0");
    const values = ticks.map((t) => Number(t.label));
    const step = values[1]! - values[0]!;
    for (const v of values) expect(Math.abs(v / step - Math.round(v / step))).toBeLessThan(1e-6);
    const y0 = ticks.find((t) => t.label === "0")!.y;
    const bar = (n: number) => {
      const m = new RegExp(
        `<rect x="[\\d.]+" y="([\\d.]+)" width="[\\d.]+" height="([\\d.]+)" fill="[^"]+"><title>pair ${n}: ([^<]+)</title>`,
      ).exec(svg)!;
      return { top: Number(m[1]), bottom: Number(m[1]) + Number(m[2]), value: m[3] };
    };
    expect(bar(2)).toMatchObject({ value: "-0.30 ms" });
    expect(bar(2).top).toBeCloseTo(y0, 0); // hangs from 0 downwards
    expect(bar(2).bottom).toBeGreaterThan(y0 + 10);
    expect(bar(1).bottom).toBeCloseTo(y0, 0); // stands on 0
    expect(bar(1).top).toBeLessThan(y0 - 10);
    for (const label of ["block threshold +0.20 ms", "A/A floor +0.12 ms", "A/A floor −0.12 ms", "mean +0.18 ms"])
      expect(svg).toContain(`>${label}</text>`);
    expect(svg).toMatch(
      /<rect x="\d+" y="[\d.]+" width="\d+" height="[\d.]+" fill="#[0-9a-f]{6}" fill-opacity="0.14"\/>/,
    ); // the interval band
  });

  it("an A/A chart names the ports and leaves the block threshold out", () => {
    const a = aaRun([0.02, -0.03, 0.01, -0.02, 0.03, -0.01]);
    const arms = armsOf(a);
    expect(textChart(a.headline, 99, arms)).toContain("port :8002 − port :8001 at p99");
    expect(textChart(a.headline, 99, arms)).not.toContain("threshold");
    expect(svgChart(a.headline, 99, arms)).not.toContain("threshold");
  });
});
