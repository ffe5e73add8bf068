// What the builds cost, from the host's per-slice accounting of the measured arm
// (docs/design/0017-host-faults.md): CPU time per completed request, cores busy, and memory. Paired
// like latency: one difference per pair, a t interval on them, and the same difference as a percent
// of the champion's mean.
import { mean } from "simple-statistics";
import type { Slice } from "../contract/result";
import type { SlicePair } from "./pairs";
import { pairedT } from "./tests";

export interface PairedAmount {
  /** Means over the pairs that carry the field on both slices. */
  champion: number;
  challenger: number;
  /** Mean of the per-pair differences (challenger − champion) and its interval. */
  estimate: number;
  ci: [number, number];
  /** The same, in percent of the champion's mean. */
  percent: number;
  percentCi: [number, number];
  p: number;
  pairs: number;
}

export interface Resources {
  /** CPU µs per completed request. */
  cpuUsPerRequest: PairedAmount | null;
  /** Average CPU cores busy. */
  cpuCores: PairedAmount | null;
  /** Memory at the slice's end, in bytes. */
  rssBytes: PairedAmount | null;
}

const fields = {
  cpuUsPerRequest: "service_cpu_us_per_request",
  cpuCores: "service_cpu_cores",
  rssBytes: "service_rss_bytes",
} as const satisfies Record<keyof Resources, keyof Slice>;

/** The paired intervals of each resource the host measured; null where fewer than two pairs carry it. */
export function pairedResources(pairs: readonly SlicePair[], confidence: number): Resources | null {
  const out = Object.fromEntries(
    Object.entries(fields).map(([key, field]) => [key, pairedAmount(pairs, field, confidence)]),
  ) as unknown as Resources;
  return out.cpuUsPerRequest || out.cpuCores || out.rssBytes ? out : null;
}

function pairedAmount(
  pairs: readonly SlicePair[],
  field: (typeof fields)[keyof Resources],
  confidence: number,
): PairedAmount | null {
  const both = pairs.flatMap((x) => {
    const [a, b] = [x.champion[field], x.challenger[field]];
    return a === undefined || b === undefined ? [] : [[a, b] as const];
  });
  if (both.length < 2) return null;
  const champion = mean(both.map(([a]) => a));
  const t = pairedT(
    both.map(([a, b]) => b - a),
    confidence,
  );
  const pct = (x: number) => (champion > 0 ? (100 * x) / champion : 0);
  return {
    champion,
    challenger: mean(both.map(([, b]) => b)),
    estimate: t.mean,
    ci: [t.ci.lo, t.ci.hi],
    percent: pct(t.mean),
    percentCi: [pct(t.ci.lo), pct(t.ci.hi)],
    p: t.p,
    pairs: both.length,
  };
}
