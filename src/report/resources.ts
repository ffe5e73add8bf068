// What the builds cost, as the report, the check title and the CLI say it: table rows for CPU
// per request, cores and memory, and one line when a cost differs beyond doubt, so a change in
// CPU alone (same latency, more CPU) shows on every verdict. Pure.

import type { PairedAmount, Resources } from "../analysis/resources";
import type { Comparison } from "../analysis/verdict";
import { confidenceLabel, mib, micros, signedPercent } from "./format";

const rows: { key: keyof Resources; label: string; show: (x: number) => string }[] = [
  { key: "cpuUsPerRequest", label: "CPU per request", show: micros },
  { key: "cpuCores", label: "CPU cores busy", show: (x) => x.toFixed(3) },
  { key: "rssBytes", label: "memory", show: mib },
];

const signed = (show: (x: number) => string, x: number) => `${x > 0 ? "+" : ""}${show(x)}`;
const percentInterval = ([lo, hi]: readonly [number, number]) => `[${signedPercent(lo)}, ${signedPercent(hi)}]`;

/** The comparison table's rows for the resources the host measured (metric | champion | challenger | delta | CI). */
export function resourceRows(c: Comparison): string[] {
  if (!c.resources) return [];
  return rows.flatMap(({ key, label, show }) => {
    const r = c.resources![key];
    if (!r) return [];
    const limit =
      key === "cpuUsPerRequest" && c.cpuLimitPercent !== null
        ? ` (blocks past ${signedPercent(c.cpuLimitPercent)})`
        : "";
    return [
      `| ${label} | ${show(r.champion)} | ${show(r.challenger)} | ${signed(show, r.estimate)} (${signedPercent(r.percent)}) | [${signed(show, r.ci[0])}, ${signed(show, r.ci[1])}], ${percentInterval(r.percentCi)}${limit} |`,
    ];
  });
}

/** The costs whose interval excludes 0: "CPU per request +29.3% (95% CI [+27.1%, +31.5%])". */
export function resourceChanges(c: Comparison): string[] {
  const detected = (r: PairedAmount | null): r is PairedAmount => !!r && (r.ci[0] > 0 || r.ci[1] < 0);
  return rows
    .filter(({ key }) => key !== "cpuCores") // cores follow CPU per request at a fixed rate
    .flatMap(({ key, label }) => {
      const r = c.resources?.[key] ?? null;
      return detected(r)
        ? [`${label} ${signedPercent(r.percent)} (${confidenceLabel(c.confidence)} CI ${percentInterval(r.percentCi)})`]
        : [];
    });
}

/** "CPU per request +29%" for a check title, or null. */
export function resourceTitle(c: Comparison): string | null {
  const cpu = c.resources?.cpuUsPerRequest;
  if (!cpu || !(cpu.ci[0] > 0 || cpu.ci[1] < 0)) return null;
  return `CPU per request ${cpu.percent > 0 ? "+" : ""}${cpu.percent.toFixed(0)}%`;
}
