// npm run bench: the full analysis of 10 pairs with 10,000 bootstrap resamples (target: well
// under 100 ms), beside its parts, so the ratios show where the time goes.
import { bench, describe } from "vitest";
import { bootstrapMeanInterval } from "../../src/analysis/bootstrap";
import { seededRandom } from "../../src/analysis/random";
import { pairedT } from "../../src/analysis/tests";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { markdownReport } from "../../src/report/markdown";
import { makeResult, pairsFromDiffs } from "./fixtures";
import ref from "./reference-values.json";

const d = ref.datasets.karan_faster.d;
const results = [{ name: "r.json", result: makeResult({ pairs: pairsFromDiffs(d) }) }];
const settings = { ...defaultSettings, bootstrapResamples: 10_000 };

describe("verdict engine, 10 pairs", () => {
  bench("analyze (10,000 bootstrap resamples)", () => {
    analyze(results, settings);
  });
  bench("analyze + markdown report", () => {
    markdownReport(analyze(results, settings));
  });
  bench("bootstrap interval alone (10,000 resamples)", () => {
    bootstrapMeanInterval(d, 0.95, 10_000, seededRandom(1));
  });
  bench("t interval alone", () => {
    pairedT(d, 0.95);
  });
});
