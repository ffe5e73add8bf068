// Coverage and power of the estimators, by simulation at the defaults' sizes on the request-level model of latency-model.ts
// (estimator-models.ts). Seeded; the figures it prints are docs/design/0008-pooled-percentile.md's.
import { describe, expect, it } from "vitest";
import { ESTIMATORS, median, POOLED, pct, run } from "./estimator-models";
import { DEFAULT_MODEL } from "./latency-model";

describe("estimators at the defaults' sizes: 90 pairs x 300 requests, heavy tails, shared noise, drift", () => {
  const GATES = 600;

  // At 95% on a single look; the gate's first look is at 97.5% (its A/A labels: the extending gate's test).
  it("the pooled p99's jackknife interval covers ≥ 94% (A/A and +5%), and has the most power", () => {
    const aa = run(DEFAULT_MODEL, GATES, 1);
    const shifted = [0.02, 0.05, 0.1].map((shift, i) =>
      run({ ...DEFAULT_MODEL, shift }, i === 1 ? GATES : GATES / 2, 10 + i),
    );
    const lines = ESTIMATORS.map((e, i) => {
      const a = aa.tallies[i]!;
      const power = shifted.map((s) => pct(s.tallies[i]!.red / s.tallies[i]!.halfWidths.length));
      return `| ${e.name} | ${pct(a.covered / GATES)} | ${pct(shifted[1]!.tallies[i]!.covered / GATES)} | ${pct(a.labelled / GATES)} | ${power.join(" | ")} | ${((100 * median(a.halfWidths)) / aa.level).toFixed(2)}% |`;
    });
    console.log(
      `[simulation] estimators, ${GATES} gates each (p99 ≈ ${(aa.level / 1000).toFixed(2)} ms):\n| estimator | coverage A/A | coverage +5% | A/A labelled | power +2% | +5% | +10% | half-width, % of p99 |\n${lines.join("\n")}`,
    );
    const pooled = ESTIMATORS.indexOf(POOLED);
    expect(aa.tallies[pooled]!.covered / GATES).toBeGreaterThanOrEqual(0.94);
    expect(shifted[1]!.tallies[pooled]!.covered / GATES).toBeGreaterThanOrEqual(0.94);
    for (const s of shifted) {
      const power = s.tallies.map((t) => t.red);
      expect(Math.max(...power)).toBe(power[pooled]);
    }
  });
});
