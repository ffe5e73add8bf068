// What an A/A calibration says (floor, bias, drift), how stored floors reach the verdict
// engine, and when a new champion's A/A check passes. Pure.
import { describe, expect, it } from "vitest";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { calibrationReport, calibrations, championCheck, floorRecord, floorSettings, type StoredFloor } from "../../src/calibration";
import { makeResult, pairsFromDiffs } from "./fixtures";
import ref from "./reference-values.json";

const aa = (d: number[], workload = "default", rate = 1000) =>
  analyze([{ name: `aa-${workload}`, result: makeResult({ pairs: pairsFromDiffs(d), workload, rate }) }], defaultSettings).comparisons;

const stored = (half: number, ci: [number, number], time = "2026-11-14T04:17:00Z"): StoredFloor => ({
  workload: "default", rate: 1000, half_width_ms: half, ci_ms: ci, pairs: 10, run_id: "calibrate-1-1-0", time,
});

describe("calibrations", () => {
  it("the floor is the half-width of the A/A t interval; an interval with 0 in it is unbiased", () => {
    const [c] = calibrations(aa(ref.datasets.null_noise.d), []);
    const [lo, hi] = ref.datasets.null_noise.ci95 as [number, number];
    expect(c!.halfWidthMs).toBeCloseTo((hi - lo) / 2, 9);
    expect(c!.ciMs[0]).toBeCloseTo(lo, 9);
    expect(c!.unbiased).toBe(true);
    expect([c!.previous, c!.driftMs, c!.driftPercent]).toEqual([null, null, null]);
    expect(floorRecord(c!)).toEqual({ workload: "default", rate: 1000, half_width_ms: c!.halfWidthMs, ci_ms: c!.ciMs, pairs: 10 });
  });

  it("an interval that excludes 0 is a biased host; drift is against the latest earlier floor of the same key", () => {
    const history = [stored(0.5, [-0.5, 0.5], "2026-11-07T04:17:00Z"), stored(0.1, [-0.1, 0.1]), { ...stored(9, [-9, 9]), workload: "other" }];
    const [c] = calibrations(aa(ref.datasets.small_regression.d), history);
    expect(c!.unbiased).toBe(false);
    expect(c!.previous!.half_width_ms).toBe(0.1);
    expect(c!.driftMs).toBeCloseTo(c!.halfWidthMs - 0.1, 12);
    expect(c!.driftPercent).toBeCloseTo((100 * (c!.halfWidthMs - 0.1)) / 0.1, 9);
    const report = calibrationReport([c!], { champion: "c".repeat(40), percentile: 99, history });
    expect(report).toContain("## perf-gate calibration: ⚠️ biased host");
    expect(report).toMatch(/\| default@1000 \| ±0\.17 ms \| \+0\.32 ms \| \[\+0\.15, \+0\.49\] ms \| \*\*no\*\* \| 10 \| ±0\.10 ms \(2026-11-14\) \| \+0\.068 ms \(\+68%\) \|/);
    expect(report).toContain("- default@1000: ±0.50 (2026-11-07) → ±0.10 (2026-11-14) → ±0.17 (now)");
  });

  it("hands the verdict engine each key's floor, and the bias of those whose interval excludes 0", () => {
    const floors = { "default@1000": stored(0.07, [-0.05, 0.09]), "checkout@50": { ...stored(0.1, [0.02, 0.22]), workload: "checkout", rate: 50 } };
    expect(floorSettings(floors)).toEqual({ floorMs: { "default@1000": 0.07, "checkout@50": 0.1 }, hostBiasMs: { "checkout@50": [0.02, 0.22] } });
    // A floor recorded before intervals were stored is a floor without a bias verdict.
    const { ci_ms: _, ...old } = stored(0.2, [0, 0]);
    expect(floorSettings({ "default@1000": old })).toEqual({ floorMs: { "default@1000": 0.2 }, hostBiasMs: {} });
  });
});

describe("a new champion's A/A check", () => {
  it("passes when the ports agree within the block threshold, fails when they differ past it", () => {
    expect(championCheck(analyze([{ name: "aa", result: makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) }) }]))).toEqual({ passed: true, findings: [] });
    const apart = championCheck(analyze([{ name: "aa", result: makeResult({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]) }) }]));
    expect(apart.passed).toBe(false);
    expect(apart.findings).toEqual(["default@1000: the ports differ by +2.58 ms at p99, beyond the block threshold ±2.00 ms"]);
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
