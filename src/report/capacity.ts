// The words and tables of `perf-gate capacity`: a gate's host time, a host's day, and a pool's
// queue at a range of gate rates (docs/design/0027-capacity-on-paper.md). Pure.
import type { GateHostTime, QueueEstimate } from "../analysis/capacity";

export interface CapacityPlan {
  /** Where the config came from, as given. */
  config: string;
  runs: { key: string; warmupSeconds: number; sliceSeconds: number; pairs: number; seconds: number }[];
  runOverheadSeconds: number;
  gate: GateHostTime;
  maxExtensions: number;
  extensionRate: number;
  /** A promotion's A/A check on each host: its comparison, pairs and host seconds. */
  promotion: { key: string; pairs: number; seconds: number };
  promotionsPerDay: number;
  busyHours: number;
  landingSeconds: number;
  maxWaitMinutes: number;
  rows: { gatesPerDay: number; cells: { hosts: number; estimate: QueueEstimate }[]; hostsNeeded: number | null }[];
}

const s = (x: number) => `${Math.round(x)} s`;

function wait(e: QueueEstimate): string {
  if (!Number.isFinite(e.meanWaitSeconds)) return `over capacity (${Math.round(e.utilization * 100)}% busy)`;
  const w =
    e.meanWaitSeconds < 90 ? `${Math.round(e.meanWaitSeconds)} s` : `${(e.meanWaitSeconds / 60).toFixed(1)} min`;
  return `${Math.round(e.utilization * 100)}% busy: ${w} (${Math.round(e.waitProbability * 100)}% wait)`;
}

export function capacityMarkdown(p: CapacityPlan): string {
  const busyDay = p.busyHours * 3600;
  const promotionShare = (p.promotionsPerDay * p.promotion.seconds) / busyDay;
  const hosts = p.rows[0]?.cells.map((c) => c.hosts) ?? [];
  const mean = p.gate.meanSeconds;
  return [
    `Host time per gate, from the planned runs of ${p.config} (each run also holds its host ${s(p.runOverheadSeconds)}: the wait for quiet CPUs, both arms' fresh starts and health checks, stopping them):`,
    "",
    "| run | warm-up | slices | overhead | host time |",
    "| --- | ---: | ---: | ---: | ---: |",
    ...p.runs.map(
      (r) =>
        `| ${r.key} | ${s(r.warmupSeconds)} | ${r.pairs} pairs × 2 × ${r.sliceSeconds} s = ${s(2 * r.pairs * r.sliceSeconds)} | ${s(p.runOverheadSeconds)} | ${s(r.seconds)} |`,
    ),
    `| **a gate** | | | | **${s(p.gate.seconds)}** |`,
    "",
    `A comparison whose interval stays unclear extends itself up to ${p.maxExtensions} times (the same run again): ${s(p.gate.maxSeconds)} if every one did. ` +
      `With ${Math.round(p.extensionRate * 100)}% of the extensions taken, a gate holds its host ${s(mean)} on average. ` +
      `Every host also runs each promotion's A/A check (${p.promotion.key}, ${p.promotion.pairs} pairs: ${s(p.promotion.seconds)}; ${p.promotionsPerDay} a day take ${(promotionShare * 100).toFixed(1)}% of its ${p.busyHours} busy hours) ` +
      `and each week's calibration (every comparison's A/A run: ${s(p.gate.seconds)}, scheduled outside the busy hours).`,
    "",
    `A host runs at most ${Math.floor((busyDay * (1 - promotionShare)) / mean)} such gates in ${p.busyHours} busy hours, back to back; a queue stays short below ~70% of that, ${Math.floor((0.7 * busyDay * (1 - promotionShare)) / mean)}.`,
    "",
    `Mean wait for a host, gates arriving at random in the busy hours (M/G/c, checked against a simulation of the pool's landing; a waiting gate starts on the first host freed ${s(p.landingSeconds)} after):`,
    "",
    `| gates a day | ${hosts.map((h) => `${h} host${h === 1 ? "" : "s"}`).join(" | ")} | hosts for a mean wait under ${p.maxWaitMinutes} min |`,
    `| ---: | ${hosts.map(() => "---").join(" | ")} | ---: |`,
    ...p.rows.map(
      (r) =>
        `| ${r.gatesPerDay} | ${r.cells.map((c) => wait(c.estimate)).join(" | ")} | ${r.hostsNeeded ?? "more than 64"} |`,
    ),
  ].join("\n");
}
