// The pooled percentile, its jackknife over pairs and the group-sequential levels against values
// computed independently by numpy and scipy (reference-pooled.py); the extension rule and the
// sampling limit on cases chosen to sit on one side of them; and the verdict on slices that carry
// real HDR histograms.
import { describe, expect, it } from "vitest";
import { efficiencyOf, efficiencySentence } from "../../src/analysis/efficiency";
import { blocksLeft, extensionWanted, unclear } from "../../src/analysis/extension";
import { armSample, pooledDifference } from "../../src/analysis/pooled-quantile";
import { seededRandom } from "../../src/analysis/random";
import { nominalAlphas, spentAlpha } from "../../src/analysis/sequential";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { analysisJson } from "../../src/report/json";
import { markdownReport } from "../../src/report/markdown";
import { resultWithRequests } from "./fixtures";
import { DEFAULT_MODEL, simulatePairs } from "./latency-model";
import ref from "./reference-pooled.json";

const close = (got: number, want: number, rel = 1e-9, abs = 1e-9) =>
  expect(Math.abs(got - want), `got ${got}, want ${want}`).toBeLessThanOrEqual(Math.max(abs, rel * Math.abs(want)));

describe("against numpy and scipy reference values", () => {
  for (const [name, r] of Object.entries(ref.pooled)) {
    for (const q of [50, 90, 99] as const) {
      it(`${name}: pooled p${q} difference and its jackknife over pairs`, () => {
        const want = r[`q${q}`];
        const champion = armSample(r.pairs.map((p) => p[0]!));
        const challenger = armSample(r.pairs.map((p) => p[1]!));
        const got = pooledDifference(champion, challenger, q / 100);
        close(got.estimate, want.estimate);
        got.leaveOneOut.forEach((x, i) => {
          close(x, want.leave_one_out[i]!);
        });
        close(got.se, want.se);
      });
    }
  }

  it("group-sequential nominal levels: the first rejection at look k has the α spent at k", () => {
    for (const { alpha, pairs, nominal } of ref.sequential) {
      nominalAlphas(alpha, pairs).forEach((a, i) => {
        close(a, nominal[i]!, 1e-3, 1e-6);
      });
    }
  });
});

describe("repeated looks", () => {
  it("spend at most α however many looks follow: α(1 − 2^−k)", () => {
    expect(spentAlpha(0.05, 1)).toBeCloseTo(0.025, 12);
    expect(spentAlpha(0.05, 3)).toBeCloseTo(0.04375, 12);
    expect(spentAlpha(0.05, 60)).toBeLessThanOrEqual(0.05);
  });

  it("refuse looks whose pairs do not grow, naming them", () => {
    expect(() => nominalAlphas(0.05, [90, 90])).toThrow(/increasing, got 90, 90/);
    expect(() => nominalAlphas(0.05, [0])).toThrow(/positive/);
    expect(() => nominalAlphas(1.5, [10])).toThrow(/alpha must be in \(0, 1\)/);
  });
});

describe("the extension rule", () => {
  const look = (ciMs: [number, number], estimateMs: number, seMs: number) => ({
    ciMs,
    thresholdMs: 1,
    estimateMs,
    seMs,
    pairs: 90,
    lookHistory: [{ pairs: 90 }],
  });

  it("an interval holding the threshold is unclear; one within ± it or wholly past it is clear", () => {
    expect(unclear([-0.5, 1.2], 1)).toBe(true);
    expect(unclear([-1.2, 0.5], 1)).toBe(true);
    expect(unclear([-0.8, 0.9], 1)).toBe(false);
    expect(unclear([1.1, 2], 1)).toBe(false);
  });

  it("gives a build at most 1 + max_extensions looks of the gate's own: a rerun of an extended build adds its one look", () => {
    expect(blocksLeft(2, 0, 1)).toBe(2); // a first gate
    expect(blocksLeft(2, 1, 2)).toBe(1);
    expect(blocksLeft(2, 0, 2)).toBe(1); // a rerun of a gate that did not extend
    expect(blocksLeft(2, 0, 3)).toBe(0); // a rerun of a gate that extended once, or of two gates
    expect(blocksLeft(2, 0, 5)).toBe(0);
    expect(blocksLeft(0, 0, 1)).toBe(0);
  });

  it("extends an unclear interval that more pairs could settle, and no other", () => {
    // ±1.2 around 0.1: three blocks' worth would narrow it to about ±0.8, within ±1.
    expect(extensionWanted(look([-1.1, 1.3], 0.1, 0.55), 0.05, 2)).toBe(true);
    // Clear already.
    expect(extensionWanted(look([-0.5, 0.7], 0.1, 0.27), 0.05, 2)).toBe(false);
    // No blocks left.
    expect(extensionWanted(look([-1.1, 1.3], 0.1, 0.55), 0.05, 0)).toBe(false);
    // A host too noisy for this threshold: even three blocks leave it holding ±1 (futile).
    expect(extensionWanted(look([-4.9, 5.1], 0.1, 2.2), 0.05, 2)).toBe(false);
    // An estimate at the threshold stays unclear however narrow.
    expect(extensionWanted(look([0.4, 1.6], 1, 0.27), 0.05, 2)).toBe(false);
  });
});

describe("the sampling limit", () => {
  it("says what would narrow the interval: the host when its variance is over half, else more requests", () => {
    const noisy = efficiencyOf([-1.46, 1.46], 0.73, 0.5);
    expect(noisy.samplingHalfWidthMs).toBeCloseTo(1, 12);
    expect(noisy.hostAddsPercent).toBeCloseTo(46, 9);
    expect(efficiencySentence(noisy)).toMatch(
      /host noise adds 46% to this interval; a quieter host would narrow it, more requests would not/,
    );
    const quiet = efficiencyOf([-1.2, 1.2], 0.6, 0.5);
    expect(quiet.narrowedBy).toBe("more requests");
    expect(efficiencySentence(quiet)).toMatch(
      /host noise adds 20% to this interval; more requests would narrow it, a quieter host would not/,
    );
    expect(efficiencySentence(efficiencyOf([-1, 1], 0.45, 0.5))).toMatch(/at its sampling limit/);
  });
});

describe("a verdict on slices with their histograms", () => {
  const rand = seededRandom(33);
  const settings = { ...defaultSettings, bootstrapResamples: 200, samplingResamples: 50 };

  it("uses the pooled percentile from 20 pairs, says so with its sampling limit, and keeps the per-slice t below", () => {
    const pairs = simulatePairs(rand, { ...DEFAULT_MODEL, pairs: 30, shift: 0.1 });
    const a = analyze([{ name: "r.json", result: resultWithRequests(pairs) }], settings);
    const c = a.headline;
    expect(c.estimator).toEqual({ kind: "pooled", fallback: null });
    // The estimate is the pooled difference of what the histograms hold (3 significant digits).
    const exact =
      pooledDifference(armSample(pairs.map((p) => p.champion)), armSample(pairs.map((p) => p.challenger)), 0.99)
        .estimate / 1000;
    expect(Math.abs(c.estimateMs - exact)).toBeLessThan(0.01 * Math.abs(exact) + 0.01);
    expect(c.efficiency!.samplingHalfWidthMs).toBeGreaterThan(0);
    expect(c.efficiency!.halfWidthMs).toBeCloseTo((c.ciMs[1] - c.ciMs[0]) / 2, 12);
    const json = analysisJson(a).comparisons[0]!;
    expect(json.estimator).toBe("pooled");
    expect(json.efficiency!.sampling_half_width_ms).toBe(c.efficiency!.samplingHalfWidthMs);
    expect(json.look_history).toHaveLength(1);
    expect(markdownReport(a)).toMatch(
      /p99 interval: one percentile per arm over every request of the kept pairs.*the same requests with no host noise would give ±/,
    );
    const four = analyze([{ name: "r.json", result: resultWithRequests(pairs.slice(0, 4)) }], settings).headline;
    expect(four.estimator).toEqual({ kind: "per-slice", fallback: "4 pairs, fewer than the 20 its interval needs" });
  });

  it("judges each look of pooled runs at its own level, and reports every look", () => {
    const builds = { kind: "ab" as const, challenger_sha: "abc1234", champion_sha: "def5678" };
    const runs = [0, 1, 2].map((k) => ({
      name: `run-${k}`,
      result: resultWithRequests(simulatePairs(rand, { ...DEFAULT_MODEL, pairs: 25 }), `run-${k}`, builds),
    }));
    const a = analyze(runs, settings);
    const levels = nominalAlphas(0.05, [25, 50, 75]);
    expect(a.headline.lookHistory.map((l) => [l.run, l.pairs])).toEqual([
      ["run-0", 25],
      ["run-1", 50],
      ["run-2", 75],
    ]);
    a.headline.lookHistory.forEach((l, i) => {
      expect(l.confidence).toBeCloseTo(1 - levels[i]!, 12);
    });
    expect(a.headline.confidence).toBeCloseTo(1 - levels[2]!, 12);
    expect(markdownReport(a)).toMatch(/Looks at this build.*1\. run-0, 25 pairs: .* at 97\.5%.*3\. run-2, 75 pairs/);
  });
});
