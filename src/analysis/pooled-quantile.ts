// One percentile per arm over every request of the kept pairs, with inference that resamples
// whole pairs (docs/design/0001-pooled-percentile.md). A slice's p99 read from its 300 requests
// is about its 3rd largest value: noisy and biased, and the mean of 90 of them carries that
// noise. The pooled percentile reads the tail of all 27,000 requests of an arm at once; taking
// a pair out of both arms together (the jackknife over pairs) keeps the pairing that cancels
// the host's shared slow spells.
import { studentTQuantile, studentTTwoSidedP } from "./distributions";

/** One arm's recorded latencies of the kept pairs, ascending, each with the pair it came from. */
export interface ArmSample {
  values: Float64Array;
  /** The pair (0-based, in the order given) each value was recorded in. */
  owner: Int32Array;
  /** Recorded requests per pair. */
  perPair: Float64Array;
}

/** Builds an arm's sample from each pair's recorded latencies (any order within a pair). */
export function armSample(pairs: readonly (ArrayLike<number>)[]): ArmSample {
  const total = pairs.reduce((acc, p) => acc + p.length, 0);
  const tagged = new Array<[number, number]>(total);
  const perPair = new Float64Array(pairs.length);
  let k = 0;
  pairs.forEach((p, i) => {
    perPair[i] = p.length;
    for (let j = 0; j < p.length; j++) tagged[k++] = [p[j]!, i];
  });
  tagged.sort((a, b) => a[0] - b[0]);
  return { values: Float64Array.from(tagged, (t) => t[0]), owner: Int32Array.from(tagged, (t) => t[1]), perPair };
}

/**
 * The percentile q (0-1) of an arm's requests, each pair's counted `weight(pair)` times (and
 * each request `requestWeight[i]` times within its pair, when given: a resample of the pair's
 * requests, which keeps each pair's count): the values ranked as if repeated, then linear
 * interpolation between the two ranks around q·(W−1) (numpy's default, Hyndman-Fan type 7).
 * Walked from the nearer end: a p99 reads ~1% of them.
 */
export function weightedPercentile(s: ArmSample, q: number, weight: (pair: number) => number, requestWeight?: Float64Array): number {
  let total = 0;
  for (let i = 0; i < s.perPair.length; i++) total += weight(i) * s.perPair[i]!;
  if (total <= 0) throw new RangeError("weightedPercentile: no requests");
  const pos = q * (total - 1);
  const fromTop = q >= 0.5;
  // Ranks counted from the walked end.
  const lowRank = fromTop ? total - 1 - Math.ceil(pos) : Math.floor(pos);
  const highRank = fromTop ? total - 1 - Math.floor(pos) : Math.ceil(pos);
  let seen = 0;
  let first = NaN;
  const n = s.values.length;
  for (let k = 0; k < n; k++) {
    const e = fromTop ? n - 1 - k : k;
    const w = weight(s.owner[e]!) * (requestWeight ? requestWeight[e]! : 1);
    if (w === 0) continue;
    seen += w;
    if (Number.isNaN(first) && seen > lowRank) first = s.values[e]!;
    if (seen > highRank) {
      const second = s.values[e]!;
      // fromTop: first is the higher-ranked value (rank ceil(pos)), second the lower.
      const frac = pos - Math.floor(pos);
      return fromTop ? second + frac * (first - second) : first + frac * (second - first);
    }
  }
  throw new RangeError("weightedPercentile: rank past the sample");
}

export interface PooledDifference {
  /** Challenger's pooled percentile minus the champion's, in the samples' unit. */
  estimate: number;
  /** The jackknife-over-pairs standard error. */
  se: number;
  df: number;
  /** The estimate with each pair left out, in turn (its pseudo-sample). */
  leaveOneOut: Float64Array;
}

const all = () => 1;

/**
 * The pooled percentile difference and its delete-one-pair jackknife standard error: each pair
 * is taken out of both arms at once, so what the two slices of a pair share moves both pooled
 * percentiles together and cancels in the difference, as it does in a paired difference.
 */
export function pooledDifference(champion: ArmSample, challenger: ArmSample, q: number): PooledDifference {
  const n = champion.perPair.length;
  if (n !== challenger.perPair.length) throw new RangeError("pooledDifference: the arms have different numbers of pairs");
  if (n < 2) throw new RangeError(`pooledDifference: need at least 2 pairs, got ${n}`);
  const estimate = weightedPercentile(challenger, q, all) - weightedPercentile(champion, q, all);
  const leaveOneOut = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const without = (p: number) => (p === i ? 0 : 1);
    leaveOneOut[i] = weightedPercentile(challenger, q, without) - weightedPercentile(champion, q, without);
  }
  let m = 0;
  for (const x of leaveOneOut) m += x / n;
  let ss = 0;
  for (const x of leaveOneOut) ss += (x - m) ** 2;
  return { estimate, se: Math.sqrt(((n - 1) / n) * ss), df: n - 1, leaveOneOut };
}

/** The two-sided Student t interval and p-value of an estimate with a standard error. */
export function tInterval(estimate: number, se: number, df: number, confidence: number): { lo: number; hi: number; t: number; p: number } {
  const q = studentTQuantile(1 - (1 - confidence) / 2, df);
  const t = se === 0 ? (estimate === 0 ? 0 : Math.sign(estimate) * Infinity) : estimate / se;
  return { lo: estimate - q * se, hi: estimate + q * se, t, p: studentTTwoSidedP(t, df) };
}
