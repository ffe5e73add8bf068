// Turns results into slice pairs: one champion and one challenger slice per pair index. A
// pair with an invalid or missing slice is dropped whole, and the drop is recorded.
import { decodeFromCompressedBase64 } from "hdr-histogram-js";
import type { LoadgenResult, Slice } from "../contract/result";
import { AnalysisInputError } from "./input-error";

export interface SlicePair {
  run: string;
  pair: number;
  champion: Slice;
  challenger: Slice;
}

export interface DroppedPair {
  run: string;
  pair: number;
  reason: string;
}

export function extractPairs(run: string, result: LoadgenResult): { pairs: SlicePair[]; dropped: DroppedPair[] } {
  const byPair = new Map<number, Slice[]>();
  for (const s of result.slices) byPair.set(s.pair, [...(byPair.get(s.pair) ?? []), s]);
  const pairs: SlicePair[] = [];
  const dropped: DroppedPair[] = [];
  for (const [pair, slices] of [...byPair.entries()].sort((a, b) => a[0] - b[0])) {
    if (slices.length > 2) {
      throw new AnalysisInputError(`${run}: pair ${pair} has ${slices.length} slices (indices ${slices.map((s) => s.index).join(", ")}), expected 2`);
    }
    const champion = slices.find((s) => s.arm === "champion");
    const challenger = slices.find((s) => s.arm === "challenger");
    if (slices.length === 2 && (!champion || !challenger)) {
      throw new AnalysisInputError(`${run}: pair ${pair} has both slices on the ${slices[0]!.arm} arm (mismatched arms)`);
    }
    if (!champion || !challenger) {
      dropped.push({ run, pair, reason: "incomplete pair (the run stopped before its second slice)" });
      continue;
    }
    const invalid = [champion, challenger].filter((s) => !s.valid);
    if (invalid.length > 0) {
      dropped.push({ run, pair, reason: invalid.map((s) => `${s.arm} slice ${s.index}: ${s.invalid_reason || "invalid"}`).join("; ") });
      continue;
    }
    pairs.push({ run, pair, champion, challenger });
  }
  return { pairs, dropped };
}

const namedPercentiles: Record<string, "p50" | "p90" | "p99" | "p999"> = { "50": "p50", "90": "p90", "99": "p99", "99.9": "p999" };

/** The slice's corrected latency at a percentile, in µs; other than p50/90/99/99.9 it reads the histogram. */
export function slicePercentileUs(s: Slice, percentile: number): number {
  const named = namedPercentiles[String(percentile)];
  if (named) return s.latency_us[named];
  return decodeFromCompressedBase64(s.histogram).getValueAtPercentile(percentile);
}
