// The value axis every chart of paired differences shares: round ticks (steps of 1, 2 or 5 times
// a power of ten) over a range that always holds 0, the interval, the A/A floor and, when it is
// near enough to be read on the same scale, the block threshold. Pure.
import type { Comparison } from "../analysis/verdict";

export interface Ticks {
  ticks: number[];
  step: number;
  /** Decimals a tick label needs: 0.05 → 2, 0.2 → 1, 5 → 0. */
  decimals: number;
}

/** Round ticks covering [lo, hi]: multiples of a 1-2-5 step, so 0 is a tick whenever lo ≤ 0 ≤ hi. */
export function niceTicks(lo: number, hi: number, target = 5): Ticks {
  if (!(Number.isFinite(lo) && Number.isFinite(hi)) || lo > hi)
    throw new RangeError(`niceTicks: [${lo}, ${hi}] is not a range`);
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 0.01;
    [lo, hi] = [lo - pad, hi + pad];
  }
  const raw = (hi - lo) / target;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw * (1 - 1e-9)) ?? 10) * power;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks: number[] = [];
  for (let k = Math.floor(lo / step + 1e-9); k * step <= hi + step * 1e-9 || ticks.length === 0; k++)
    ticks.push(Number((k * step).toFixed(decimals)) + 0);
  if (ticks[ticks.length - 1]! < hi - step * 1e-9)
    ticks.push(Number((ticks[ticks.length - 1]! + step).toFixed(decimals)) + 0);
  return { ticks, step, decimals };
}

export interface ChartScale extends Ticks {
  min: number;
  max: number;
  /** Where the block threshold is drawn, or null when it is too far off to share the scale. */
  threshold: number | null;
  floor: number | null;
}

/**
 * The scale for a comparison's chart of `values` (the paired differences, maybe binned). The
 * threshold joins the range only within 3 times the data's reach, so a 2 ms threshold does
 * not squash differences of 0.05 ms into a line; the chart then says where it is instead.
 */
export function chartScale(
  values: readonly number[],
  c: Pick<Comparison, "ciMs" | "floorMs" | "thresholdMs">,
): ChartScale {
  const floor = c.floorMs !== null && c.floorMs > 0 ? c.floorMs : null;
  const data = [0, ...values, ...c.ciMs, ...(floor ? [-floor, floor] : [])];
  let lo = Math.min(...data);
  let hi = Math.max(...data);
  const reach = Math.max(Math.abs(lo), Math.abs(hi));
  const threshold = c.thresholdMs > 0 && c.thresholdMs <= 3 * reach ? c.thresholdMs : null;
  if (threshold !== null) hi = Math.max(hi, threshold);
  const span = hi - lo || reach || 0.01;
  // A little air above and below, so no bar ends exactly on the frame.
  lo -= lo < 0 ? span * 0.03 : 0;
  hi += hi > 0 ? span * 0.03 : 0;
  const t = niceTicks(lo, hi, 6);
  return { ...t, min: t.ticks[0]!, max: t.ticks[t.ticks.length - 1]!, threshold, floor };
}

/** A tick's label: exactly its decimals, signed, 0 unsigned. */
export function tickLabel(v: number, decimals: number): string {
  if (v === 0) return "0";
  return `${v > 0 ? "+" : ""}${v.toFixed(decimals)}`;
}
