// How a verdict shows on GitHub: the check's conclusion, the label and the title. Pure.
import type { Analysis } from "../analysis/verdict";
import { quartet } from "./quartet";

export type Conclusion = "success" | "failure" | "neutral";

export interface GateOutcome {
  conclusion: Conclusion;
  label: "perf:green" | "perf:red" | "perf:grey";
  title: string;
}

/** Green and grey pass; an advisory red is neutral (visible, not blocking); a blocking red fails. */
export function gateOutcome(a: Analysis): GateOutcome {
  const conclusion: Conclusion = a.blocking ? "failure" : a.verdict === "red" ? "neutral" : "success";
  const state = a.blocking ? "red, blocking" : a.verdict === "red" ? "red, advisory" : a.verdict;
  const biased = a.hostBias.length > 0 ? " (biased host: see the report)" : "";
  return { conclusion, label: `perf:${a.verdict}`, title: `${state}: ${quartet(a.headline, a.percentile)}${biased}`.slice(0, 255) };
}
