// The one-line result every verdict carries: estimate, interval, A/A floor and pairs.

import { halfWidth } from "../analysis/floors";
import type { Comparison } from "../analysis/verdict";
import { type Arms, CHAMPION_VS_CHALLENGER } from "./arms";
import { confidenceLabel, ms, msInterval, percentLabel, signedMs } from "./format";

export function quartet(c: Comparison, percentile: number, arms: Arms = CHAMPION_VS_CHALLENGER): string {
  const at = percentLabel(percentile);
  if (arms.aa) return aaQuartet(c, at, arms);
  const floor = c.floorMs === null ? "A/A floor unknown" : `A/A floor ±${ms(c.floorMs)} ms`;
  const detail = `${confidenceLabel(c.confidence)} CI ${msInterval(c.ciMs)}; ${floor}; n=${c.pairs} pairs`;
  if (c.latency === "within floor")
    return `within the host's noise floor at ${at}: estimate ${signedMs(c.estimateMs)} ms (${detail})`;
  if (c.latency === "slower" || c.latency === "faster")
    return `challenger is ${ms(Math.abs(c.estimateMs))} ms ${c.latency} at ${at} (${detail})`;
  return `no detectable change at ${at}: estimate ${signedMs(c.estimateMs)} ms (${detail})`;
}

/** An A/A run measures the floor rather than quoting one, and its arms are ports. */
function aaQuartet(c: Comparison, at: string, arms: Arms): string {
  const detail = `${confidenceLabel(c.confidence)} CI ${msInterval(c.ciMs)}; floor ±${ms(halfWidth(c.ciMs))} ms; n=${c.pairs} pairs`;
  const [lo, hi] = c.ciMs;
  if (lo <= 0 && hi >= 0)
    return `no detectable difference between the ports at ${at}: estimate ${signedMs(c.estimateMs)} ms (${detail})`;
  return `${arms.challenger} measures ${ms(Math.abs(c.estimateMs))} ms ${c.estimateMs > 0 ? "slower" : "faster"} than ${arms.champion} at ${at} with the same build (${detail})`;
}
