// How a verdict shows on GitHub: the check's conclusion, the label and the title. Pure.
import type { Analysis, Comparison } from "../analysis/verdict";
import { budgetWords } from "./budget";
import { quartet } from "./quartet";
import { resourceTitle } from "./resources";

export type Conclusion = "success" | "failure" | "neutral";

export interface GateOutcome {
  conclusion: Conclusion;
  label: "perf:green" | "perf:red" | "perf:grey";
  title: string;
}

const reasonTitle = {
  latency: () => "",
  errors: () => "more errors",
  cpu: () => "more CPU per request",
  budget: (c: Comparison) => `past the regression budget: ${c.budget ? budgetWords(c.budget) : "see the report"}`,
} as const;

/**
 * " (more CPU per request)" when a comparison blocks for a reason beside its latency, which its
 * quartet (a latency sentence) does not say; "" otherwise.
 */
export function blockedByNote(c: Comparison): string {
  const why = c.blockedBy.map((r) => reasonTitle[r](c)).filter(Boolean);
  return why.length ? ` (${why.join(", ")})` : "";
}

/** Green and grey pass; an advisory red is neutral (visible, not blocking); a blocking red fails. */
export function gateOutcome(a: Analysis): GateOutcome {
  const h = a.headline;
  const conclusion: Conclusion = a.blocking ? "failure" : a.verdict === "red" ? "neutral" : "success";
  const state = a.blocking ? `red, blocking${blockedByNote(h)}` : a.verdict === "red" ? "red, advisory" : a.verdict;
  // A cost change shows even when the latency did not move; what the host flagged, when it did.
  const notes = [
    resourceTitle(h),
    a.preflight.length > 0
      ? `host flagged ${[...new Set(a.preflight.map((f) => f.check))].join(", ")}: see the report`
      : null,
    a.hostBias.length > 0 ? "biased host: see the report" : null,
  ].filter(Boolean);
  return {
    conclusion,
    label: `perf:${a.verdict}`,
    title: `${state}: ${quartet(h, a.percentile)}${notes.length ? ` (${notes.join("; ")})` : ""}`.slice(0, 255),
  };
}
