// The instrument's health: whether the load generator kept to its own schedule in a slice. A
// slice where it fell behind itself measured the generator, not the service
// (docs/design/0011-instrument-vouches-for-itself.md: one stalled slice, dispatch lag p99 893 ms,
// carried a whole estimate of -23.5 ms while the median pair differed by +0.11 ms), so its pair is
// dropped whole. The lag is read at the verdict's percentile (p99 for a p99 verdict): a stall moves
// a slice's pNN only when it delayed more than (100-NN)% of the slice's requests, and at p90 the
// lag p99 of a few hundred requests is the wake-up hiccup of its top few, which dropped most pairs
// on a VM whose idle CPUs halt. Pure; the one place the rule is written.
import type { Plan } from "../contract/plan";
import type { Slice } from "../contract/result";
import { namedPercentileAtOrAbove, slicePercentileUs } from "./statistic";

/** Dispatch lag at the verdict's percentile is tolerated up to this share of the slice's latency there… */
export const LAG_SHARE = 0.1;
/** …or this many µs, whichever is larger: below it the OS timer's own granularity dominates. */
export const LAG_FLOOR_US = 1000;
/** The generator's pace may differ from the schedule by this share of the slice's requests… */
export const RATE_TOLERANCE = 0.01;
/** …or by one request: a slice of 50 requests cannot be 1% off by less than one. */
const RATE_TOLERANCE_REQUESTS = 1;

export interface Disturbance {
  arm: Slice["arm"];
  index: number;
  /** Where the lag was read ("p99"), the slice's dispatch lag there and the most it could have been, in ms. */
  lagAt: string;
  lagMs: number;
  lagLimitMs: number;
  /** How far the generator's pace was from the schedule, in percent (negative: behind). */
  rateErrorPercent: number;
  /** Which of the two rules the slice broke. */
  lagging: boolean;
  offRate: boolean;
}

/**
 * The dispatch lag a plan asks for: a request may leave up to send_window_us late to share a
 * wake-up with the requests due after it (docs/design/0016-generator-cpu.md), which happens only
 * when a loop's requests are closer together than the window. It is the latest such a request
 * leaves: the whole gaps between one loop's requests that fit in the window.
 */
export function plannedLagUs(plan: Pick<Plan, "rate" | "generator_cpus" | "send_window_us">): number {
  const gapUs = (1e6 / plan.rate) * (plan.generator_cpus ?? 1);
  return Math.floor(plan.send_window_us / gapUs) * gapUs;
}

/**
 * Whether the generator fell behind itself in a slice: its dispatch lag at the SLO percentile
 * above max(1 ms, 10% of the slice's latency there) plus the lag its plan asks for
 * (plannedLagUs), or its achieved rate more than 1% (and more than one request) off the
 * requests its schedule put in the slice.
 */
export function disturbance(s: Slice, sliceSeconds: number, percentile: number, plannedUs: number): Disturbance | null {
  const limitUs = Math.max(LAG_FLOOR_US, LAG_SHARE * slicePercentileUs(s, percentile)) + plannedUs;
  const lagAt = namedPercentileAtOrAbove(percentile);
  const lagUs = s.dispatch_lag_us[lagAt];
  const lagging = lagUs > limitUs;
  const achieved = s.achieved_rps * sliceSeconds;
  const offBy = achieved - s.scheduled;
  const offRate = s.scheduled > 0 && Math.abs(offBy) > Math.max(RATE_TOLERANCE * s.scheduled, RATE_TOLERANCE_REQUESTS);
  if (!lagging && !offRate) return null;
  return {
    arm: s.arm,
    index: s.index,
    lagAt,
    lagMs: lagUs / 1000,
    lagLimitMs: limitUs / 1000,
    rateErrorPercent: s.scheduled > 0 ? (100 * offBy) / s.scheduled : 0,
    lagging,
    offRate,
  };
}

/**
 * A slice the host itself could not vouch for although the generator kept its schedule:
 * foreign load (CPU spent on anything but the run) past the host's limit, or the measured arm
 * served connections the load generator did not open (someone else loaded it). Its pair is
 * dropped as a disturbed one, and most pairs disturbed is "could not measure".
 */
export interface HostDisturbance {
  arm: Slice["arm"];
  index: number;
  /** CPU cores the host spent on other work during the slice, when it measured them. */
  foreignCores: number | null;
  /** Connections the arm served that the load generator did not open (0: none). */
  foreignConnections: number;
  /** The host's words. */
  reason: string;
}

export function hostDisturbance(s: Slice): HostDisturbance | null {
  if (!s.host_disturbance) return null;
  return {
    arm: s.arm,
    index: s.index,
    foreignCores: s.foreign_cpu_cores ?? null,
    foreignConnections: s.foreign_connections ?? 0,
    reason: s.host_disturbance,
  };
}

/** "champion slice 4: the host was disturbed (foreign load: 1.02 CPU cores …)". */
export function describeHostDisturbance(d: HostDisturbance): string {
  return `${d.arm} slice ${d.index}: the host was disturbed (${d.reason})`;
}

/** "challenger slice 7: dispatch lag p99 893 ms (limit 1.0 ms), rate -11.8%". */
export function describeDisturbance(d: Disturbance): string {
  const lag = `dispatch lag ${d.lagAt} ${lagMs(d.lagMs)} ms${d.lagging ? ` over its limit ${lagMs(d.lagLimitMs)} ms` : ""}`;
  const rate = `rate ${d.rateErrorPercent > 0 ? "+" : ""}${d.rateErrorPercent.toFixed(1)}% off the schedule${d.offRate ? "" : " (within 1%)"}`;
  return `${d.arm} slice ${d.index}: the load generator fell behind (${lag}; ${rate})`;
}

function lagMs(x: number): string {
  return x >= 10 ? x.toFixed(0) : x.toFixed(1);
}
