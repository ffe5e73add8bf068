// The per-slice statistic a paired difference is taken of: the slice's corrected latency at a
// percentile. One step, so that another estimator (issue 13) replaces it in one place.
import { decodeFromCompressedBase64, type Histogram, type JsHistogram } from "hdr-histogram-js";
import type { Slice } from "../contract/result";
import { incompleteBeta } from "./distributions";

const namedPercentiles: Record<string, "p50" | "p90" | "p99" | "p999"> = { "50": "p50", "90": "p90", "99": "p99", "99.9": "p999" };

/**
 * The named percentile a slice's other distributions (dispatch lag) are read at for a verdict at
 * `percentile`: that one when named, else the next named above it, p99.9 past p99.
 */
export function namedPercentileAtOrAbove(percentile: number): "p50" | "p90" | "p99" | "p999" {
  const at = [50, 90, 99, 99.9].find((p) => p >= percentile) ?? 99.9;
  return namedPercentiles[String(at)]!;
}

/** The slice's corrected latency at a percentile, in µs; other than p50/90/99/99.9 it reads the histogram. */
export function slicePercentileUs(s: Slice, percentile: number): number {
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
export function sliceHarrellDavisUs(s: Slice, percentile: number): number {
  // decodeFromCompressedBase64 makes the JavaScript histogram (WebAssembly is never initialised).
  const h = histogramOf(s) as JsHistogram;
  const n = h.totalCount;
  if (n === 0) return 0;
  const q = percentile / 100;
  const a = q * (n + 1);
  const b = (1 - q) * (n + 1);
  // The weights are the Beta(a, b) mass of each bucket's share of the ranks; outside a few
  // standard deviations of q they are below double precision, so only those buckets are read.
  const sd = Math.sqrt((a * b) / ((a + b) ** 2 * (a + b + 1)));
  const from = Math.max(0, q - 12 * sd);
  const to = Math.min(1, q + 12 * sd);
  let sum = 0;
  let weight = 0;
  let below = 0;
  const it = h.recordedValuesIterator;
  it.reset();
  while (it.hasNext()) {
    const v = it.next();
    const lo = below / n;
    below += v.countAtValueIteratedTo;
    const hi = below / n;
    if (hi < from) continue;
    if (lo > to) break;
    const w = incompleteBeta(hi, a, b) - incompleteBeta(lo, a, b);
    sum += w * h.medianEquivalentValue(v.valueIteratedTo);
    weight += w;
  }
  return sum / weight;
}

// A verdict reads each slice several times (its pair's difference, its arm's summary, its
// health, the report's detail): the histogram is decoded once per slice, and goes with it.
const decoded = new WeakMap<Slice, Histogram>();

function histogramOf(s: Slice): Histogram {
  let h = decoded.get(s);
  if (!h) {
    h = decodeFromCompressedBase64(s.histogram);
    decoded.set(s, h);
  }
  return h;
}
