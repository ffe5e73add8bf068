// The per-slice statistic a paired difference is taken of: the slice's corrected latency at a
// percentile. One step, so that another estimator (issue 13) replaces it in one place.
import { decodeFromCompressedBase64, type Histogram } from "hdr-histogram-js";
import type { Slice } from "../contract/result";

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
