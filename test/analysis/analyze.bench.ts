// npm run bench: the full analysis of 10 pairs with 10,000 bootstrap resamples (target: well
// under 100 ms), beside its parts, so the ratios show where the time goes; and the pooled
// percentile's sample of a gate's requests, built by merge passes, beside the heap merge it
// replaced (kept here as the previous design).
import { bench, describe } from "vitest";
import { bootstrapMeanInterval } from "../../src/analysis/bootstrap";
import { type ArmSample, armSample } from "../../src/analysis/pooled-quantile";
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

/** The previous design of armSample: each pair sorted, then merged through a heap of the pairs' next values. */
function armSampleByHeap(pairs: readonly ArrayLike<number>[]): ArmSample {
  const runs = pairs.map((p) => Float64Array.from(p).sort());
  const total = runs.reduce((acc, r) => acc + r.length, 0);
  const values = new Float64Array(total);
  const owner = new Int32Array(total);
  const next = new Int32Array(runs.length);
  const heap: number[] = runs.flatMap((r, i) => (r.length > 0 ? [i] : []));
  const head = (i: number) => runs[i]![next[i]!]!;
  const less = (a: number, b: number) => head(heap[a]!) < head(heap[b]!);
  const down = (from: number) => {
    for (let i = from; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(l, m)) m = l;
      if (r < heap.length && less(r, m)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
  for (let k = 0; k < total; k++) {
    const i = heap[0]!;
    values[k] = head(i);
    owner[k] = i;
    if (++next[i]! === runs[i]!.length) {
      const last = heap.pop()!;
      if (heap.length > 0) heap[0] = last;
    }
    if (heap.length > 0) down(0);
  }
  return { values, owner, perPair: Float64Array.from(runs, (r) => r.length) };
}

for (const pairs of [90, 810]) {
  // One arm of a gate at the defaults (90 pairs of 300 requests), and of one extended twice
  // with two reruns pooled (810 pairs), as the extending gate's simulation pools at its looks.
  const rand = seededRandom(pairs);
  const arm = Array.from({ length: pairs }, () => Array.from({ length: 300 }, () => 300 * Math.exp(rand())));
  describe(`an arm's sample for the pooled percentile, ${pairs} pairs x 300 requests`, () => {
    bench("merge passes (armSample)", () => {
      armSample(arm);
    });
    bench("heap merge (the previous design)", () => {
      armSampleByHeap(arm);
    });
  });
}
