// The latency estimate a verdict rests on, and how far its interval is from the sampling limit
// of the same requests (docs/design/0008-pooled-percentile.md). With every slice's histogram and
// enough pairs: one percentile per arm over all kept pairs, its standard error from the
// jackknife over pairs. Otherwise (the promotion check's 4 pairs, a result without histograms):
// the mean of the per-pair differences of each slice's own percentile, with Student t.
import { type ArmSample, armSample, pooledDifference, weightedPercentile } from "./pooled-quantile";
import { hasHistogram, type LatencyRecord, sliceValuesUs } from "./statistic";
import { pairedT } from "./tests";

/**
 * The fewest pairs the pooled estimator is used with. Simulated (test/analysis/estimator-
 * simulation.test.ts), the jackknife's 95% interval covered 94-95% from 20 pairs up and 93% at
 * 10; the per-slice t interval covers at any number of pairs, wider.
 */
export const MIN_POOLED_PAIRS = 20;

export type EstimatorKind = "pooled" | "per-slice";

export const ESTIMATOR_DESCRIPTION: Record<EstimatorKind, string> = {
  pooled:
    "one percentile per arm over every request of the kept pairs, its standard error from the jackknife over pairs (each pair left out of both arms), Student t on pairs − 1 df",
  "per-slice": "each slice's own percentile, Student t on the mean of the per-pair differences",
};

export interface LatencyEstimate {
  kind: EstimatorKind;
  /** Why the per-slice estimator was used; null for the pooled one. */
  fallback: string | null;
  estimateMs: number;
  seMs: number;
  df: number;
  /** Each arm's pooled percentile (ms); null for the per-slice estimator. */
  pooledMs: { champion: number; challenger: number } | null;
  /**
   * The standard error the same requests would give with no host noise: each slice's requests
   * resampled within its arm and pair, the estimate taken again. Null without histograms.
   */
  samplingSeMs: number | null;
}

/**
 * The estimate from the kept pairs; d is each pair's difference of per-slice percentiles (ms).
 * `resamples` requests resamples for the sampling limit (0: not computed).
 */
export function estimateLatency(
  pairs: readonly { champion: LatencyRecord; challenger: LatencyRecord }[],
  d: readonly number[],
  percentile: number,
  resamples: number,
  rand: () => number,
): LatencyEstimate {
  const withHistograms = pairs.every((p) => hasHistogram(p.champion) && hasHistogram(p.challenger));
  const q = percentile / 100;
  const arms = withHistograms
    ? ([
        armSample(pairs.map((p) => sliceValuesUs(p.champion))),
        armSample(pairs.map((p) => sliceValuesUs(p.challenger))),
      ] as const)
    : null;
  const fallback = !arms
    ? "the slices carry no histograms"
    : pairs.length < MIN_POOLED_PAIRS
      ? `${pairs.length} pairs, fewer than the ${MIN_POOLED_PAIRS} its interval needs`
      : null;
  if (arms && fallback === null) {
    const r = pooledDifference(arms[0], arms[1], q);
    const sampling =
      resamples > 0 ? samplingSe(arms, resamples, rand, (a, w) => weightedPercentile(a, q, one, w)) : null;
    const pooledMs = {
      champion: weightedPercentile(arms[0], q, one) / 1000,
      challenger: weightedPercentile(arms[1], q, one) / 1000,
    };
    return {
      kind: "pooled",
      fallback,
      estimateMs: r.estimate / 1000,
      seMs: r.se / 1000,
      df: r.df,
      pooledMs,
      samplingSeMs: sampling === null ? null : sampling / 1000,
    };
  }
  const t = pairedT(d, 0.95);
  const sampling =
    arms && resamples > 0 ? samplingSe(arms, resamples, rand, (a, w) => meanSlicePercentile(a, q, w)) : null;
  return {
    kind: "per-slice",
    fallback,
    estimateMs: t.mean,
    seMs: t.se,
    df: t.df,
    pooledMs: null,
    samplingSeMs: sampling === null ? null : sampling / 1000,
  };
}

const one = () => 1;

/**
 * The sd of an arm-difference statistic over resamples of each slice's own requests (with
 * replacement, the slice's count kept): what the finite samples alone make it vary by.
 */
function samplingSe(
  arms: readonly [ArmSample, ArmSample],
  resamples: number,
  rand: () => number,
  stat: (a: ArmSample, requestWeight: Float64Array) => number,
): number {
  const members = arms.map(membersByPair);
  const draws = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    const [champion, challenger] = arms.map((a, i) => stat(a, resample(members[i]!, a.values.length, rand)));
    draws[b] = challenger! - champion!;
  }
  let m = 0;
  for (const x of draws) m += x / resamples;
  let ss = 0;
  for (const x of draws) ss += (x - m) ** 2;
  return Math.sqrt(ss / (resamples - 1));
}

/** Each pair's requests: their indices in the arm's ascending values. */
function membersByPair(a: ArmSample): Int32Array[] {
  const lists: number[][] = Array.from({ length: a.perPair.length }, () => []);
  a.owner.forEach((pair, i) => {
    lists[pair]!.push(i);
  });
  return lists.map((l) => Int32Array.from(l));
}

/** How many times each request is drawn when every pair's requests are resampled within the pair. */
function resample(members: readonly Int32Array[], size: number, rand: () => number): Float64Array {
  const w = new Float64Array(size);
  for (const m of members) for (let k = 0; k < m.length; k++) w[m[Math.floor(rand() * m.length)]!]! += 1;
  return w;
}

/** The mean over pairs of each resampled slice's percentile: its value at rank ⌈q·n⌉, as a histogram reads it. */
function meanSlicePercentile(a: ArmSample, q: number, requestWeight: Float64Array): number {
  const rank = Array.from(a.perPair, (n) => Math.max(1, Math.ceil(q * n)));
  const seen = new Float64Array(a.perPair.length);
  const at = new Float64Array(a.perPair.length).fill(NaN);
  for (let e = 0; e < a.values.length; e++) {
    const pair = a.owner[e]!;
    if (!Number.isNaN(at[pair]!)) continue;
    seen[pair]! += requestWeight[e]!;
    if (seen[pair]! >= rank[pair]!) at[pair] = a.values[e]!;
  }
  let sum = 0;
  for (const v of at) sum += v;
  return sum / at.length;
}
