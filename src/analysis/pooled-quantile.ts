// One percentile per arm over every request of the kept pairs, with inference that resamples
// whole pairs (docs/design/0008-pooled-percentile.md). A slice's p99 read from its 300 requests
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
export function armSample(pairs: readonly ArrayLike<number>[]): ArmSample {
  // Each pair sorted on its own (native numeric sort), then neighbouring runs merged pass by
  // pass, log2(pairs) passes of plain loops: a gate's 54,000 values sort in a few milliseconds,
  // and the simulations that pool hundreds of pairs at every look stay fast. Ties keep the
  // earlier pair first.
  const runs = pairs.map(sortedCopy);
  const total = runs.reduce((acc, r) => acc + r.length, 0);
  let values = new Float64Array(total);
  let owner = new Int32Array(total);
  // Where each pair's run starts, and the end.
  let bounds = [0];
  for (const [i, r] of runs.entries()) {
    const at = bounds.at(-1)!;
    values.set(r, at);
    owner.fill(i, at, at + r.length);
    bounds.push(at + r.length);
  }
  let spareValues = new Float64Array(total);
  let spareOwner = new Int32Array(total);
  while (bounds.length > 2) {
    const merged = [0];
    for (let b = 0; b + 1 < bounds.length; b += 2) {
      const end = b + 2 < bounds.length ? bounds[b + 2]! : bounds[b + 1]!;
      mergeRuns(values, owner, bounds[b]!, bounds[b + 1]!, end, spareValues, spareOwner);
      merged.push(end);
    }
    [values, spareValues] = [spareValues, values];
    [owner, spareOwner] = [spareOwner, owner];
    bounds = merged;
  }
  return { values, owner, perPair: Float64Array.from(runs, (r) => r.length) };
}

/** A pair's latencies as a sorted Float64Array: copied, and sorted unless they already are. */
function sortedCopy(p: ArrayLike<number>): Float64Array {
  const v = new Float64Array(p);
  for (let i = 1; i < v.length; i++) if (v[i - 1]! > v[i]!) return v.sort();
  return v;
}

/** Merges the sorted runs [from, mid) and [mid, end) of values (with their owners) into out, at the same positions. */
function mergeRuns(
  values: Float64Array,
  owner: Int32Array,
  from: number,
  mid: number,
  end: number,
  outValues: Float64Array,
  outOwner: Int32Array,
): void {
  let i = from;
  let j = mid;
  for (let k = from; k < end; k++) {
    const takeLeft = j >= end || (i < mid && values[i]! <= values[j]!);
    const at = takeLeft ? i++ : j++;
    outValues[k] = values[at]!;
    outOwner[k] = owner[at]!;
  }
}

/**
 * The percentile q (0-1) of an arm's requests, each pair's counted `weight(pair)` times (and
 * each request `requestWeight[i]` times within its pair, when given: a resample of the pair's
 * requests, which keeps each pair's count): the values ranked as if repeated, then linear
 * interpolation between the two ranks around q·(W−1) (numpy's default, Hyndman-Fan type 7).
 * Walked from the nearer end: a p99 reads ~1% of them.
 */
export function weightedPercentile(
  s: ArmSample,
  q: number,
  weight: (pair: number) => number,
  requestWeight?: Float64Array,
): number {
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

/**
 * The percentile q of an arm with each pair left out in turn (unit weights otherwise), as
 * weightedPercentile would give it, without walking the sample once per pair: the value at
 * reduced rank R is at the first position (counted from the nearer end) with R + 1 values of
 * other pairs up to it, found by jumping ahead by the shortfall and counting the left-out pair's
 * positions by binary search.
 */
export function leaveOnePairOut(s: ArmSample, q: number): Float64Array {
  const n = s.values.length;
  const fromTop = q >= 0.5;
  const at = (k: number) => (fromTop ? n - 1 - k : k);
  // Each pair's positions in walk order, ascending.
  const positions: number[][] = Array.from({ length: s.perPair.length }, () => []);
  for (let k = 0; k < n; k++) positions[s.owner[at(k)]!]!.push(k);
  const out = new Float64Array(s.perPair.length);
  for (let i = 0; i < s.perPair.length; i++) {
    const mine = positions[i]!;
    const upTo = (k: number) => {
      let lo = 0;
      let hi = mine.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (mine[mid]! <= k) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    /** The walk position of the value at reduced rank r (0-based from the nearer end). */
    const position = (r: number) => {
      let k = r;
      for (let others = k + 1 - upTo(k); others < r + 1; others = k + 1 - upTo(k)) k += r + 1 - others;
      while (s.owner[at(k)] === i) k--;
      return k;
    };
    const total = n - mine.length;
    if (total <= 0) throw new RangeError("leaveOnePairOut: no requests without the pair");
    const pos = q * (total - 1);
    const frac = pos - Math.floor(pos);
    const first = s.values[at(position(fromTop ? total - 1 - Math.ceil(pos) : Math.floor(pos)))]!;
    const second = s.values[at(position(fromTop ? total - 1 - Math.floor(pos) : Math.ceil(pos)))]!;
    out[i] = fromTop ? second + frac * (first - second) : first + frac * (second - first);
  }
  return out;
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
  if (n !== challenger.perPair.length)
    throw new RangeError("pooledDifference: the arms have different numbers of pairs");
  if (n < 2) throw new RangeError(`pooledDifference: need at least 2 pairs, got ${n}`);
  const estimate = weightedPercentile(challenger, q, all) - weightedPercentile(champion, q, all);
  const [a, b] = [leaveOnePairOut(champion, q), leaveOnePairOut(challenger, q)];
  const leaveOneOut = b.map((x, i) => x - a[i]!);
  let m = 0;
  for (const x of leaveOneOut) m += x / n;
  let ss = 0;
  for (const x of leaveOneOut) ss += (x - m) ** 2;
  return { estimate, se: Math.sqrt(((n - 1) / n) * ss), df: n - 1, leaveOneOut };
}

/** The two-sided Student t interval and p-value of an estimate with a standard error. */
export function tInterval(
  estimate: number,
  se: number,
  df: number,
  confidence: number,
): { lo: number; hi: number; t: number; p: number } {
  const q = studentTQuantile(1 - (1 - confidence) / 2, df);
  const t = se === 0 ? (estimate === 0 ? 0 : Math.sign(estimate) * Infinity) : estimate / se;
  return { lo: estimate - q * se, hi: estimate + q * se, t, p: studentTTwoSidedP(t, df) };
}
