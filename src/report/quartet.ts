// The one-line result every verdict carries: estimate, interval, A/A floor and pairs.
import type { Comparison } from "../analysis/verdict";
import { confidenceLabel, ms, msInterval, percentLabel, signedMs } from "./format";

export function quartet(c: Comparison, percentile: number): string {
  const at = percentLabel(percentile);
  const floor = c.floorMs === null ? "A/A floor unknown" : `A/A floor ±${ms(c.floorMs)} ms`;
  const detail = `${confidenceLabel(c.confidence)} CI ${msInterval(c.ciMs)}; ${floor}; n=${c.pairs} pairs`;
  if (c.latency === "within floor") return `within the host's noise floor at ${at}: estimate ${signedMs(c.estimateMs)} ms (${detail})`;
  if (c.latency === "slower" || c.latency === "faster") return `challenger is ${ms(Math.abs(c.estimateMs))} ms ${c.latency} at ${at} (${detail})`;
  return `no detectable change at ${at}: estimate ${signedMs(c.estimateMs)} ms (${detail})`;
}
