// The estimators' coverage with few pairs, by simulation at the defaults' sizes on the request-level model of latency-model.ts
// (estimator-models.ts). Seeded; the figures it prints are docs/design/0008-pooled-percentile.md's.
import { describe, expect, it } from "vitest";
import { MIN_POOLED_PAIRS } from "../../src/analysis/latency-estimator";
import { ESTIMATORS, POOLED, pct, run } from "./estimator-models";
import { DEFAULT_MODEL } from "./latency-model";

describe("estimators with few pairs: heavy tails, shared noise, drift", () => {
  it(`from ${MIN_POOLED_PAIRS} pairs the pooled interval still covers ≥ 94%; with the promotion check's 4 pairs, the per-slice t interval does`, () => {
    const few = run({ ...DEFAULT_MODEL, pairs: MIN_POOLED_PAIRS }, 800, 21);
    const four = run({ ...DEFAULT_MODEL, pairs: 4 }, 800, 22);
    console.log(
      `[simulation] A/A coverage at ${MIN_POOLED_PAIRS} pairs: ${ESTIMATORS.map((e, i) => `${e.name} ${pct(few.tallies[i]!.covered / 800)}`).join(", ")}; ` +
        `at 4 pairs: ${ESTIMATORS.map((e, i) => `${e.name} ${pct(four.tallies[i]!.covered / 800)}`).join(", ")}`,
    );
    expect(few.tallies[ESTIMATORS.indexOf(POOLED)]!.covered / 800).toBeGreaterThanOrEqual(0.94);
    expect(four.tallies[0]!.covered / 800).toBeGreaterThanOrEqual(0.94);
  });
});
