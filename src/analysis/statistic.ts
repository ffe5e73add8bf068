// The per-slice statistic a paired difference is taken of: the slice's corrected latency at a
// percentile. One step, so that another estimator replaces it in one place.
import { decodeFromCompressedBase64, type Histogram, type JsHistogram } from "hdr-histogram-js";
import type { Slice } from "../contract/result";
import { incompleteBeta } from "./distributions";

/** What a percentile is read from: a slice's recorded latency, or one request class's share of it. */
export type LatencyRecord = Pick<Slice, "latency_us" | "histogram">;

const namedPercentiles: Record<string, "p50" | "p90" | "p99" | "p999"> = {
  "50": "p50",
  "90": "p90",
  "99": "p99",
  "99.9": "p999",
};

/**
 * The named percentile a slice's other distributions (dispatch lag) are read at for a verdict at
 * `percentile`: that one when named, else the next named above it, p99.9 past p99.
 */
export function namedPercentileAtOrAbove(percentile: number): "p50" | "p90" | "p99" | "p999" {
  const at = [50, 90, 99, 99.9].find((p) => p >= percentile) ?? 99.9;
  return namedPercentiles[String(at)]!;
}

/** The slice's corrected latency at a percentile, in µs; other than p50/90/99/99.9 it reads the histogram. */
export function slicePercentileUs(s: LatencyRecord, percentile: number): number {
  const named = namedPercentiles[String(percentile)];
  if (named) return s.latency_us[named];
  return histogramOf(s).getValueAtPercentile(percentile);
}

/**
 * The Harrell-Davis estimate of a slice's latency at a percentile, in µs: a weighted mean of every
 * order statistic, the i-th of n weighted by I_{i/n}(a, b) − I_{(i−1)/n}(a, b) with
 * a = q(n+1), b = (1−q)(n+1) (Harrell & Davis, Biometrika 1982). It reads the whole tail instead
 * of one order statistic, so it moves less from slice to slice than the plain percentile (issue
 * 13 compares both). Read from the HDR histogram: each recorded value's bucket is weighted as a
 * run of equal order statistics, so the estimate is exact to the histogram's 3 digits.
 */
export function sliceHarrellDavisUs(s: LatencyRecord, percentile: number): number {
  const values: number[] = [];
  const counts: number[] = [];
  eachBucket(s, (value, count) => {
    values.push(value);
    counts.push(count);
  });
  return harrellDavis(values, counts, percentile);
}

/**
 * Harrell-Davis over runs of equal values, ascending: values[i] repeated counts[i] times (a
 * histogram's buckets, or a sorted sample with every count 1).
 */
export function harrellDavis(values: ArrayLike<number>, counts: ArrayLike<number>, percentile: number): number {
  let n = 0;
  for (let i = 0; i < counts.length; i++) n += counts[i]!;
  if (n === 0) return 0;
  const q = percentile / 100;
  const a = q * (n + 1);
  const b = (1 - q) * (n + 1);
  // The weights are the Beta(a, b) mass of each run's share of the ranks; outside a few
  // standard deviations of q they are below double precision, so only those runs are read.
  const sd = Math.sqrt((a * b) / ((a + b) ** 2 * (a + b + 1)));
  const from = Math.max(0, q - 12 * sd);
  const to = Math.min(1, q + 12 * sd);
  let sum = 0;
  let weight = 0;
  let below = 0;
  for (let i = 0; i < values.length; i++) {
    const lo = below / n;
    below += counts[i]!;
    const hi = below / n;
    if (hi < from) continue;
    if (lo > to) break;
    const w = incompleteBeta(hi, a, b) - incompleteBeta(lo, a, b);
    sum += w * values[i]!;
    weight += w;
  }
  return sum / weight;
}

/** Every request a slice recorded, in µs, ascending: each histogram bucket's middle value, as often as it was counted. */
export function sliceValuesUs(s: LatencyRecord): Float64Array {
  const h = histogramOf(s);
  const out = new Float64Array(h.totalCount);
  let k = 0;
  eachBucket(s, (value, count) => {
    out.fill(value, k, k + count);
    k += count;
  });
  return out;
}

/** Whether a slice carries its histogram (a result built by hand may not). */
export function hasHistogram(s: LatencyRecord): boolean {
  return s.histogram !== "";
}

/** A slice's recorded buckets, ascending: each one's middle value and its count. */
function eachBucket(s: LatencyRecord, visit: (valueUs: number, count: number) => void): void {
  // decodeFromCompressedBase64 makes the JavaScript histogram (WebAssembly is never initialised).
  const h = histogramOf(s) as JsHistogram;
  const it = h.recordedValuesIterator;
  it.reset();
  while (it.hasNext()) {
    const v = it.next();
    visit(h.medianEquivalentValue(v.valueIteratedTo), v.countAtValueIteratedTo);
  }
}

// A verdict reads each slice several times (its pair's difference, its arm's summary, its
// health, the report's detail): the histogram is decoded once per slice, and goes with it.
const decoded = new WeakMap<LatencyRecord, Histogram>();

/** Why a slice's histogram cannot be read (not base64 of a compressed HdrHistogram V2), or null. */
export function histogramError(s: LatencyRecord): string | null {
  if (!hasHistogram(s)) return null;
  try {
    histogramOf(s);
    return null;
  } catch (e) {
    return `not a compressed HdrHistogram in base64 (${(e as Error).message})`;
  }
}

function histogramOf(s: LatencyRecord): Histogram {
  let h = decoded.get(s);
  if (!h) {
    h = decodeFromCompressedBase64(s.histogram);
    decoded.set(s, h);
  }
  return h;
}
