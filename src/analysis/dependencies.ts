// What each arm's dependencies (service.dependencies: a Redis per arm) used, per run, as the
// host recorded it. Their CPU and memory are already in the arm's per-slice figures (the
// verdict's CPU per request is the whole arm's); this lists them on their own. Pure.
import { z } from "zod";
import { armStartSchema } from "../contract/isolation";
import type { NamedResult } from "./verdict";

export interface DependencyUsage {
  run: string;
  arm: string;
  name: string;
  readySeconds: number;
  cpuSeconds: number | null;
  rssBytes: number | null;
}

const armsSchema = z.record(z.string(), armStartSchema);

/** Every dependency of every arm of every run, in run order, champion first. */
export function dependencyUsage(results: readonly NamedResult[]): DependencyUsage[] {
  return results.flatMap(({ name, result }) => {
    // A load generator's own result has no arms; a host's lists them (validated again: a result file may be anything).
    const arms = armsSchema.safeParse((result as { arms?: unknown }).arms);
    if (!arms.success) return [];
    return Object.entries(arms.data)
      .sort(([a], [b]) => Number(b === "champion") - Number(a === "champion"))
      .flatMap(([arm, start]) =>
        (start.dependencies ?? []).map((d) => ({
          run: name,
          arm,
          name: d.name,
          readySeconds: d.ready_seconds,
          cpuSeconds: d.cpu_seconds ?? null,
          rssBytes: d.rss_bytes ?? null,
        })),
      );
  });
}
