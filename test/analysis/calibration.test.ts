// What an A/A calibration says (floor, bias, drift), how stored floors reach the verdict
// engine, and when a new champion's A/A check passes. Pure.
import { describe, expect, it } from "vitest";
import { calibrations, floorRecord, floorSettings } from "../../src/analysis/floors";
import { seededRandom } from "../../src/analysis/random";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import type { StoredFloor } from "../../src/contract/host";
import { calibrationLine, calibrationReport, championCheck } from "../../src/report/calibration";
import { firstLookAt95, makeResult, pairsFromDiffs, simulatedExperiment } from "./fixtures";
import ref from "./reference-values.json";

const aa = (d: number[], workload = "default", rate = 1000) =>
  analyze([{ name: `aa-${workload}`, result: makeResult({ pairs: pairsFromDiffs(d), workload, rate }) }], firstLookAt95)
    .comparisons;

const stored = (half: number, ci: [number, number], time = "2026-11-14T04:17:00Z"): StoredFloor => ({
  workload: "default",
  rate: 1000,
  percentile: 99,
  half_width_ms: half,
  ci_ms: ci,
  pairs: 10,
  run_id: "calibrate-1-1-0",
  time,
});
const at99 = { percentile: 99, preflight: [] };

describe("calibrations", () => {
  it("the floor is the half-width of the A/A t interval; an interval with 0 in it is unbiased", () => {
    const [c] = calibrations(aa(ref.datasets.null_noise.d), [], at99);
    const [lo, hi] = ref.datasets.null_noise.ci95 as [number, number];
    expect(c!.halfWidthMs).toBeCloseTo((hi - lo) / 2, 9);
    expect(c!.ciMs[0]).toBeCloseTo(lo, 9);
    expect(c!.unbiased).toBe(true);
    expect([c!.previous, c!.driftMs, c!.driftPercent]).toEqual([null, null, null]);
    expect(floorRecord(c!)).toEqual({
      workload: "default",
      rate: 1000,
      percentile: 99,
      half_width_ms: c!.halfWidthMs,
      ci_ms: c!.ciMs,
      pairs: 10,
    });
    expect(c!.notRecorded).toBeNull();
  });

  it("an interval that excludes 0 is a biased host; drift is against the latest earlier floor of the same key and percentile", () => {
    const history = [
      stored(0.5, [-0.5, 0.5], "2026-11-07T04:17:00Z"),
      stored(0.1, [-0.1, 0.1]),
      { ...stored(9, [-9, 9]), workload: "other" },
      { ...stored(7, [-7, 7]), percentile: 90 },
    ];
    const [c] = calibrations(aa(ref.datasets.small_regression.d), history, at99);
    expect(c!.unbiased).toBe(false);
    expect(c!.previous!.half_width_ms).toBe(0.1);
    expect(c!.driftMs).toBeCloseTo(c!.halfWidthMs - 0.1, 12);
    expect(c!.driftPercent).toBeCloseTo((100 * (c!.halfWidthMs - 0.1)) / 0.1, 9);
    const report = calibrationReport([c!], { champion: "c".repeat(40), history });
    expect(report).toContain("## perf-gate calibration: ⚠️ biased host");
    expect(report).toMatch(
      /\| default@1000 \| ±0\.17 ms \| \+0\.32 ms \| \[\+0\.15, \+0\.49\] ms \| \*\*no\*\* \| 10 \| ±0\.10 ms \(2026-11-14\) \| \+0\.068 ms \(\+68%\) \|/,
    );
    expect(report).toContain("- default@1000 at p99: ±0.50 (2026-11-07) → ±0.10 (2026-11-14) → ±0.17 (now)");
  });

  it("a first run that excluded 0 is confirmed or cleared by a second: the second is the floor, both are reported", () => {
    const [excluded] = aa(ref.datasets.small_regression.d);
    const firstRuns = new Map([[excluded!.key, excluded!]]);
    const [cleared] = calibrations(aa(ref.datasets.null_noise.d), [], { ...at99, firstRuns });
    expect(cleared!.unbiased).toBe(true);
    expect(cleared!.halfWidthMs).toBeCloseTo(
      (ref.datasets.null_noise.ci95[1]! - ref.datasets.null_noise.ci95[0]!) / 2,
      9,
    );
    expect(cleared!.firstRun).toEqual({ runId: "aa-default", ciMs: excluded!.ciMs });
    expect(calibrationLine(cleared!)).toBe(
      "A/A floor for default@1000 at p99: ±0.18 ms (A/A [-0.19, +0.18] ms, n=10 pairs; first calibration; a first run's interval [+0.15, +0.49] ms excluded 0 by chance: this confirmation run's contains it); later verdicts quote it",
    );
    const report = calibrationReport([cleared!], { champion: "c".repeat(40), history: [] });
    expect(report).toContain("## perf-gate calibration: ✅ unbiased");
    expect(report).toContain(
      "- default@1000: the first run's interval [+0.15, +0.49] ms (`aa-default`) excluded 0, so it was measured again; the confirmation run's interval contains 0: chance, not bias",
    );

    const [confirmed] = calibrations(aa(ref.datasets.small_regression.d), [], { ...at99, firstRuns });
    expect(confirmed!.unbiased).toBe(false);
    expect(calibrationLine(confirmed!)).toMatch(
      /^A\/A interval for default@1000 at p99 excludes 0 in two runs \(\[\+0\.15, \+0\.49\] ms and \[\+0\.15, \+0\.49\] ms\): .*biased host/,
    );
    expect(calibrationReport([confirmed!], { champion: "c".repeat(40), history: [] })).toContain(
      "the confirmation run's excludes 0 too (both would happen by chance in 1 calibration of 400): the host is biased.",
    );
  });

  it("hands the verdict engine each key's floor at the verdict's percentile, and the bias of those whose interval excludes 0", () => {
    const floors = {
      "default@1000/p99": stored(0.07, [-0.05, 0.09]),
      "checkout@50/p99": { ...stored(0.1, [0.02, 0.22]), workload: "checkout", rate: 50 },
      "default@1000/p90": { ...stored(0.014, [-0.01, 0.018]), percentile: 90 },
    };
    expect(floorSettings(floors, 99)).toEqual({
      floorMs: { "default@1000": 0.07, "checkout@50": 0.1 },
      hostBiasMs: { "checkout@50": [0.02, 0.22] },
      floorPercentileAssumed: [],
    });
    expect(floorSettings(floors, 90)).toEqual({
      floorMs: { "default@1000": 0.014 },
      hostBiasMs: {},
      floorPercentileAssumed: [],
    });
    expect(floorSettings(floors, 50)).toEqual({ floorMs: {}, hostBiasMs: {}, floorPercentileAssumed: [] });
    // A floor recorded without its interval (perf-host stores [0, 0]) is a floor without a bias verdict.
    expect(floorSettings({ "default@1000/p99": stored(0.2, [0, 0]) }, 99)).toEqual({
      floorMs: { "default@1000": 0.2 },
      hostBiasMs: {},
      floorPercentileAssumed: [],
    });
    // One recorded before floors named their percentile is quoted at p99, and says so.
    expect(
      floorSettings({ "default@1000/p99": { ...stored(0.3, [-0.3, 0.3]), percentile_assumed: true } }, 99)
        .floorPercentileAssumed,
    ).toEqual(["default@1000"]);
  });
});

describe("a new champion's A/A check", () => {
  const check = (d: number[]) =>
    championCheck(analyze([{ name: "aa", result: makeResult({ pairs: pairsFromDiffs(d) }) }], firstLookAt95));

  it("fails only when the whole interval is past the block threshold", () => {
    expect(check(ref.datasets.null_noise.d)).toEqual({ passed: true, findings: [], notes: [] });
    const apart = check([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]);
    expect(apart.passed).toBe(false);
    expect(apart.findings).toEqual([
      "default@1000: the ports differ by +2.58 ms at p99 (95% CI [+2.51, +2.65] ms), wholly beyond the block threshold ±2.00 ms",
    ]);
    // A noisy estimate past the threshold whose interval reaches back inside it is not evidence.
    expect(check([-6, 1, -4, -1])).toEqual({ passed: true, findings: [], notes: [] });
    // A detectable difference short of the threshold is noted, not rolled back.
    expect(check([0.4, 0.5, 0.45, 0.55, 0.5, 0.4, 0.6, 0.5, 0.45, 0.5])).toEqual({
      passed: true,
      findings: [],
      notes: [
        "default@1000: the ports differ by +0.48 ms at p99 (95% CI [+0.44, +0.53] ms): not beyond the block threshold ±2.00 ms, so no rollback; if the calibration workflow finds it too, the host is biased",
      ],
    });
  });

  it("by simulation at 4 pairs: rolls back ≤ 1% of sound champions, and finds a gross port difference", () => {
    // Per-slice noise such that sd(d) equals the block threshold (2 ms on a 200 ms SLO).
    const settings = { ...defaultSettings, bootstrapResamples: 200, sloBudgetMs: 200 };
    const rate = (shiftUs: number, seed: number) => {
      const rand = seededRandom(seed);
      let failed = 0;
      let pastThreshold = 0;
      for (let i = 0; i < 2000; i++) {
        const a = analyze(
          [simulatedExperiment(rand, { pairs: 4, sigmaEUs: 2000 / Math.SQRT2, noise: "heavy", shiftUs })],
          { ...settings, seed: i },
        );
        if (!championCheck(a).passed) failed++;
        if (Math.abs(a.headline.estimateMs) > a.headline.thresholdMs) pastThreshold++;
      }
      return { failed: failed / 2000, pastThreshold: pastThreshold / 2000 };
    };
    const sound = rate(0, 11);
    const gross = rate(10_000, 12);
    console.log(
      `[champion check] 4 pairs, sd(d) = threshold: sound champions rolled back ${(100 * sound.failed).toFixed(2)}% (a point estimate past the threshold: ${(100 * sound.pastThreshold).toFixed(2)}%); a 5× threshold port difference found ${(100 * gross.failed).toFixed(1)}%`,
    );
    expect(sound.failed).toBeLessThanOrEqual(0.01);
    expect(gross.failed).toBeGreaterThanOrEqual(0.8);
  });

  it("fails when one port fails more requests", () => {
    const errors = makeResult({
      pairs: pairsFromDiffs(ref.datasets.null_noise.d),
      edit: (s) => {
        if (s.arm === "challenger") s.errors["5xx"] = 40;
      },
    });
    const check = championCheck(analyze([{ name: "aa", result: errors }]));
    expect(check.passed).toBe(false);
    expect(check.findings[0]).toMatch(/^default@1000: the ports fail differently \(0 and 400 errors\)$/);
  });
});
