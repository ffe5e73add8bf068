// The estimators the sensitivity benchmark weighs against today's (HDR percentile and
// Student t): the Harrell-Davis quantile read from a slice's histogram, and the Hodges-Lehmann
// estimate with its signed-rank interval. Checked against scipy (reference-robust.py), and the
// interval's coverage by simulation.
import { build, encodeIntoCompressedBase64 } from "hdr-histogram-js";
import { describe, expect, it } from "vitest";
import { hodgesLehmann } from "../../src/analysis/hodges-lehmann";
import { normalDraw, seededRandom } from "../../src/analysis/random";
import { sliceHarrellDavisUs } from "../../src/analysis/statistic";
import { trimmedMean } from "../../src/analysis/trimmed-mean";
import { makeSlice } from "./fixtures";
import reference from "./reference-robust.json";

describe("sliceHarrellDavisUs", () => {
  for (const [name, ref] of Object.entries(reference.harrell_davis)) {
    it(`matches scipy's mstats.hdquantiles on ${name}`, () => {
      const h = build({
        lowestDiscernibleValue: 1,
        highestTrackableValue: 60_000_000,
        numberOfSignificantValueDigits: 3,
      });
      for (const v of ref.values) h.recordValue(v);
      const s = makeSlice(0, 0, "champion", 1000, { pairs: [] });
      s.histogram = encodeIntoCompressedBase64(h);
      // Integers below 2048 are held exactly, so the histogram's estimate is the sample's (to
      // the incomplete beta's ~1e-9 relative precision).
      for (const q of [50, 90, 99] as const) expect(sliceHarrellDavisUs(s, q)).toBeCloseTo(ref[`q${q}`], 4);
    });
  }
});

describe("hodgesLehmann", () => {
  for (const [name, ref] of Object.entries(reference.hodges_lehmann)) {
    it(`matches the inversion of scipy's exact Wilcoxon test on ${name}`, () => {
      const r = hodgesLehmann(ref.d, 0.95);
      expect(r.estimate).toBeCloseTo(ref.ci95.estimate, 9);
      expect(r.lo).toBeCloseTo(ref.ci95.lo, 9);
      expect(r.hi).toBeCloseTo(ref.ci95.hi, 9);
      expect(r.confidence).toBeGreaterThanOrEqual(0.95);
    });
  }

  it("covers the centre of symmetric heavy-tailed differences at least 94% of the time at 30 pairs", () => {
    const rand = seededRandom(5);
    let covered = 0;
    const runs = 2000;
    for (let k = 0; k < runs; k++) {
      // Student t with 3 degrees of freedom: a normal over the root of a scaled chi-square.
      const d = Array.from(
        { length: 30 },
        () => normalDraw(rand) / Math.sqrt((normalDraw(rand) ** 2 + normalDraw(rand) ** 2 + normalDraw(rand) ** 2) / 3),
      );
      const r = hodgesLehmann(d, 0.95);
      if (r.lo <= 0 && r.hi >= 0) covered++;
    }
    expect(covered / runs).toBeGreaterThanOrEqual(0.94);
    expect(covered / runs).toBeLessThanOrEqual(0.97);
  });
});

describe("trimmedMean", () => {
  for (const [name, ref] of Object.entries(reference.trimmed_mean)) {
    it(`matches scipy's mstats.trimmed_mean_ci (20%) on ${name}`, () => {
      for (const [confidence, ci] of [
        [0.95, ref.ci95],
        [0.99, ref.ci99],
      ] as const) {
        const r = trimmedMean(ref.d, confidence);
        expect(r.estimate).toBeCloseTo(ci.estimate, 9);
        expect(r.lo).toBeCloseTo(ci.lo, 9);
        expect(r.hi).toBeCloseTo(ci.hi, 9);
      }
    });
  }

  it("refuses a trim that leaves fewer than two differences, and a trim of half or more", () => {
    expect(() => trimmedMean([1, 2, 3], 0.95)).not.toThrow(); // 20% of 3 trims none
    expect(() => trimmedMean([1], 0.95)).toThrow(/at least 2 differences left after trimming, got 1 of 1/);
    expect(() => trimmedMean([1, 2, 3, 4], 0.95, 0.5)).toThrow(/gamma must be in \[0, 0.5\), got 0.5/);
  });

  it("covers 0 in at least 94% of symmetric A/A gates of 30 pairs, heavy-tailed or normal", () => {
    const rand = seededRandom(17);
    const t3 = () =>
      normalDraw(rand) / Math.sqrt((normalDraw(rand) ** 2 + normalDraw(rand) ** 2 + normalDraw(rand) ** 2) / 3);
    for (const draw of [t3, () => normalDraw(rand)]) {
      let covered = 0;
      const runs = 4000;
      for (let k = 0; k < runs; k++) {
        const r = trimmedMean(Array.from({ length: 30 }, draw), 0.95);
        if (r.lo <= 0 && r.hi >= 0) covered++;
      }
      expect(covered / runs).toBeGreaterThanOrEqual(0.94);
      expect(covered / runs).toBeLessThanOrEqual(0.97);
    }
  });
});
