// Whether a gate measures more by itself (docs/design/0009-extending-gate.md): while its
// latency interval holds the block threshold (+ or −) it is unclear, neither within ± the
// threshold nor wholly past it, and another look could change that. A look that could not
// settle it even at the last extension, at the estimate so far, is not worth the host's time:
// a host whose noise floor is wider than the threshold would otherwise extend every gate.
import { tInterval } from "./pooled-quantile";
import { nominalAlphas } from "./sequential";
import type { Comparison, Look } from "./verdict";

/** The interval holds +threshold or −threshold: neither wholly within ± it nor wholly past it. */
export function unclear(ci: readonly [number, number], thresholdMs: number): boolean {
  return (ci[0] <= thresholdMs && ci[1] >= thresholdMs) || (ci[0] <= -thresholdMs && ci[1] >= -thresholdMs);
}

/** What the rule reads of a comparison. */
export type LookedAt = Pick<Comparison, "ciMs" | "thresholdMs" | "estimateMs" | "seMs" | "pairs"> & {
  lookHistory: readonly Pick<Look, "pairs">[];
};

/**
 * The blocks a gate may still add by itself: its own remaining extensions, and no more than
 * bring the build's looks to 1 + maxExtensions, so a rerun by hand of a build that already
 * extended adds its one look and no further ones.
 */
export function blocksLeft(maxExtensions: number, extensionsMade: number, looks: number): number {
  return Math.max(0, Math.min(maxExtensions - extensionsMade, 1 + maxExtensions - looks));
}

/**
 * Whether to run another block of a comparison: it is unclear, `blocks` are left (blocksLeft),
 * and with all of them its interval, narrowed as its pairs grow and at the last look's level, would be clear
 * at the present estimate. alpha is the whole procedure's (1 − the nominal confidence).
 */
export function extensionWanted(c: LookedAt, alpha: number, blocks: number): boolean {
  if (blocks < 1 || !unclear(c.ciMs, c.thresholdMs) || !(c.seMs > 0)) return false;
  const cumulative = c.lookHistory.map((l) => l.pairs);
  const block = c.pairs / c.lookHistory.length;
  const future = Array.from({ length: blocks }, (_, k) => c.pairs + (k + 1) * block);
  const last = nominalAlphas(alpha, [...cumulative, ...future]).at(-1)!;
  const se = c.seMs * Math.sqrt(c.pairs / future.at(-1)!);
  const projected = tInterval(c.estimateMs, se, future.at(-1)! - 1, 1 - last);
  return !unclear([projected.lo, projected.hi], c.thresholdMs);
}
