// The paired percentile bootstrap of mean(d), reported beside the primary t interval. At 10
// pairs it under-covers (88-90% for a nominal 95%; docs/design/0010-primary-interval.md and the simulation
// test), so it never decides a verdict.
import type { Interval } from "./tests";

export function bootstrapMeanInterval(
  d: readonly number[],
  confidence: number,
  resamples: number,
  rand: () => number,
): Interval {
  const n = d.length;
  const means = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += d[Math.floor(rand() * n)]!;
    means[b] = sum / n;
  }
  means.sort();
  const alpha = 1 - confidence;
  return { lo: quantileSorted(means, alpha / 2), hi: quantileSorted(means, 1 - alpha / 2) };
}

/** Linear interpolation between order statistics (numpy's default "linear" method). */
function quantileSorted(sorted: Float64Array, q: number): number {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (pos - lo) * (sorted[hi]! - sorted[lo]!);
}
