// The looks at one build: each run pooled in turn, judged at its group-sequential level, so that
// a report shows how the interval narrowed from run to run and why the gate went on or stopped.
import { estimateLatency } from "./latency-estimator";
import type { SlicePair } from "./pairs";
import { tInterval } from "./pooled-quantile";
import { nominalAlphas } from "./sequential";
import type { GateSettings, NamedResult } from "./verdict";

export interface Look {
  look: number;
  /** The run this look added. */
  run: string;
  pairs: number;
  estimateMs: number;
  ciMs: [number, number];
  confidence: number;
}

/**
 * Each look at one build: the runs pooled in turn (a rerun, or an extension of the gate), each
 * judged at its group-sequential level (src/analysis/sequential.ts). A run that kept no pair adds
 * no information and is no look.
 */
export function looksOf(
  group: readonly NamedResult[],
  pairs: readonly SlicePair[],
  d: readonly number[],
  s: GateSettings,
): Look[] {
  const runs: { run: string; pairs: number }[] = [];
  let total = 0;
  for (const g of group) {
    const kept = pairs.filter((p) => p.run === g.name).length;
    if (kept === 0) continue;
    total += kept;
    runs.push({ run: g.name, pairs: total });
  }
  const alphas = nominalAlphas(
    1 - s.confidence,
    runs.map((r) => r.pairs),
  );
  const seen = new Set<string>();
  return runs.map((r, k) => {
    seen.add(r.run);
    const confidence = 1 - alphas[k]!;
    const keep = pairs.map((p) => seen.has(p.run));
    const upTo = pairs.filter((_, i) => keep[i]);
    if (upTo.length < 2)
      return { look: k + 1, run: r.run, pairs: upTo.length, estimateMs: NaN, ciMs: [NaN, NaN], confidence };
    const e = estimateLatency(
      upTo,
      d.filter((_, i) => keep[i]),
      s.percentile,
      0,
      () => 0,
    );
    const ci = tInterval(e.estimateMs, e.seMs, e.df, confidence);
    return { look: k + 1, run: r.run, pairs: upTo.length, estimateMs: e.estimateMs, ciMs: [ci.lo, ci.hi], confidence };
  });
}
