// The verdict as a terminal shows it, after any progress: the verdict and its four numbers,
// what it cost in CPU and memory, what the host flagged before measuring, and the warnings.
// Shared by `perf-gate run` and `perf-gate analyze`. Pure.
import type { Analysis } from "../analysis/verdict";
import { armsOf } from "./arms";
import { quartet } from "./quartet";
import { resourceChanges } from "./resources";

export function verdictLines(a: Analysis): string[] {
  const h = a.headline;
  const state = a.blocking
    ? ` (blocking${h.blockedBy.some((r) => r !== "latency") ? `: ${h.blockedBy.join(", ")}` : ""})`
    : a.verdict === "red"
      ? " (advisory)"
      : "";
  return [
    `${a.verdict.toUpperCase()}${state}: ${quartet(h, a.percentile, armsOf(a))}`,
    ...a.comparisons.flatMap((c) =>
      resourceChanges(c).map((r) => `  resources${a.comparisons.length > 1 ? ` ${c.key}` : ""}: ${r}`),
    ),
    ...a.preflight.map((f) => `  host flagged before measuring: ${f.check}: ${f.detail}`),
    ...a.comparisons.flatMap((c) => c.flags).map((f) => `  note: ${f.code.replace(/_/g, " ")}: ${f.message}`),
  ];
}
