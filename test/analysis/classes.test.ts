// The request classes beside a verdict: each class's paired difference with the workload's own
// estimator, Holm across classes, sorted by how much each moved; a class too thin for a
// percentile says so. Checked on synthetic gates with a known shift in one class, against the
// estimator run on that class alone, and by simulated A/A gates.
import { describe, expect, it } from "vitest";
import { classBreakdown, classNames, moved } from "../../src/analysis/classes";
import { extractPairs } from "../../src/analysis/pairs";
import { seededRandom } from "../../src/analysis/random";
import { analyze } from "../../src/analysis/verdict";
import { type ClassSpec, firstLookAt95, resultWithClasses, resultWithRequests } from "./fixtures";

/** Latencies (µs) of n requests around medianUs, a pair's shared host factor applied. */
function draws(rand: () => number, n: number, medianUs: number, host: number): number[] {
  return Array.from({ length: n }, () =>
    Math.round(medianUs * host * Math.exp(0.4 * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()))),
  );
}

/** A gate of `pairs` pairs: /work (n requests a slice) and /report (m a slice), the report shifted by shiftUs on the challenger. */
function gate(seed: number, pairs: number, n: number, m: number, reportShiftUs: number): ClassSpec[] {
  const rand = seededRandom(seed);
  const work: ClassSpec["pairs"][number][] = [];
  const report: ClassSpec["pairs"][number][] = [];
  for (let i = 0; i < pairs; i++) {
    const host = Math.exp(0.15 * (rand() - 0.5));
    work.push({ champion: draws(rand, n, 300, host), challenger: draws(rand, n, 300, host) });
    report.push({
      champion: draws(rand, m, 5000, host),
      challenger: draws(rand, m, 5000, host).map((v) => v + reportShiftUs),
    });
  }
  return [
    { request: { method: "GET", path: "/work", weight: 49 }, pairs: work },
    { request: { name: "report", method: "GET", path: "/report", weight: 1 }, pairs: report },
  ];
}

describe("request classes", () => {
  it("names each class by requests[].name, else its method and path or gRPC method, numbering repeats", () => {
    expect(
      classNames({
        requests: [
          { method: "GET", path: "/items/{{rand 1000}}", weight: 9 },
          { name: "orders", method: "POST", path: "/orders", weight: 1 },
          { method: "GET", path: "/items/{{rand 1000}}", weight: 1 },
          { method: "GET", grpc: { method: "pkg.Svc/Call" }, weight: 1 },
        ],
      }),
    ).toEqual(["GET /items/{{rand 1000}}", "orders", "GET /items/{{rand 1000}} (2)", "pkg.Svc/Call"]);
  });

  it("names the class that moved and leaves the other unchanged, with the workload's own estimator", () => {
    const result = resultWithClasses(gate(7, 30, 400, 60, 2000));
    const a = analyze([{ name: "run-1", result }], { ...firstLookAt95, percentile: 90, samplingResamples: 0 });
    const { classes, missing } = a.headline.classes;
    expect(missing).toBeNull();
    expect(classes.map((c) => c.name)).toEqual(["report", "GET /work"]);
    const [report, work] = classes as [(typeof classes)[0], (typeof classes)[0]];
    expect(moved(report)).toBe(true);
    expect(report.slo!.ciMs[0]).toBeGreaterThan(0);
    expect(report.slo!.ciMs[0]).toBeLessThan(2);
    expect(report.slo!.ciMs[1]).toBeGreaterThan(2);
    expect(report.slo!.estimator).toBe("pooled");
    expect(moved(work)).toBe(false);
    expect(work.requests).toEqual({ champion: 30 * 400, challenger: 30 * 400 });
    // Holm over two classes: the smaller p doubled, the larger at least it.
    expect(report.slo!.holmP).toBeCloseTo(Math.min(1, 2 * Math.min(report.slo!.p, work.slo!.p)), 12);

    // The class's interval is the workload estimator's on that class alone.
    const alone = resultWithRequests(gate(7, 30, 400, 60, 2000)[1]!.pairs);
    const whole = analyze([{ name: "run-1", result: alone }], {
      ...firstLookAt95,
      percentile: 90,
      samplingResamples: 0,
    }).headline;
    expect(report.slo!.estimateMs).toBeCloseTo(whole.estimateMs, 9);
    expect(report.slo!.ciMs[0]).toBeCloseTo(whole.ciMs[0], 9);
  });

  it("says a class has too few requests per slice for a percentile instead of a number", () => {
    const result = resultWithClasses(gate(3, 25, 400, 12, 0));
    const { pairs } = extractPairs("run-1", result, 99);
    const { classes } = classBreakdown(result.plan, pairs, 99, 0.95, seededRandom(1));
    const report = classes.find((c) => c.name === "report")!;
    expect(report.slo).toBeNull();
    expect(report.short.slo).toBe("12 of its requests per slice, fewer than the 300 a slice's p99 is read from");
    expect(report.p50).not.toBeNull();
    expect(classes.find((c) => c.name === "GET /work")!.short.slo).toBeNull();
  });

  it("has no breakdown for a workload of one class, and says why for results without class records", () => {
    const one = resultWithRequests(gate(1, 5, 50, 5, 0)[0]!.pairs);
    expect(analyze([{ name: "r", result: one }], { ...firstLookAt95, samplingResamples: 0 }).headline.classes).toEqual({
      classes: [],
      missing: "the workload has one request class: the verdict is its",
    });
    const old = resultWithClasses(gate(1, 5, 50, 5, 0));
    for (const s of old.slices) delete s.classes;
    expect(
      analyze([{ name: "r", result: old }], { ...firstLookAt95, samplingResamples: 0 }).headline.classes.missing,
    ).toMatch(/^the slices carry no per-class records/);
  });

  // Identical builds: at most about 5% of gates may call any class moved (Holm keeps the
  // family's error at the level over the classes). 200 gates: the rate's sd is 1.5% at 5%.
  it("calls no class moved in about 95% of simulated A/A gates", () => {
    let labelled = 0;
    const gates = 200;
    for (let g = 0; g < gates; g++) {
      const result = resultWithClasses(gate(1000 + g, 25, 60, 40, 0));
      const { pairs } = extractPairs("r", result, 90);
      const { classes } = classBreakdown(result.plan, pairs, 90, 0.95, seededRandom(g));
      if (classes.some((c) => c.slo?.moved)) labelled++;
    }
    console.log(`A/A gates with a class moved: ${labelled} of ${gates}`);
    expect(labelled / gates).toBeLessThanOrEqual(0.085);
  });
});
