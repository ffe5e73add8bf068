// The per-slice statistic a paired difference is taken of: the slice's corrected latency at a
// percentile. One step, so that another estimator (issue 13) replaces it in one place.
import { decodeFromCompressedBase64 } from "hdr-histogram-js";
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
  return decodeFromCompressedBase64(s.histogram).getValueAtPercentile(percentile);
}
