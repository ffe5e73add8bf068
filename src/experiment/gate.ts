// The gate's one sequence, for the action's gate mode (and /perf rerun) and `perf-gate run`:
// measure (extending unclear comparisons), keep every result before deciding, decide against
// the host's floors, then the report with its notes, and the artifacts beside it.
import type { Analysis } from "../analysis/verdict";
import type { GateConfig } from "../config/gate-config";
import type { HostClient } from "../host/client";
import { budgetNotes } from "../report/budget";
import { markdownReport } from "../report/markdown";
import { candidateNote, evidenceNotes, identityNotes } from "../report/notes";
import { type Artifacts, writeArtifacts, writeResults } from "./artifacts";
import { measureAndDecide } from "./extend";
import { keepGate, withBudgetOf } from "./history";
import type { Evidence, Measurement } from "./measure";

export interface GateRun extends Omit<Measurement, "kind" | "pool" | "challenger"> {
  challenger: { sha: string; artifact?: string };
  /** Where report.md, analysis.json, chart.svg and result.json go. */
  outDir: string;
  /** Lines for the report, before the gate's own notes. */
  notes?: string[];
  runUrl?: string;
  /** The pull request measured, for the host's history. */
  pullRequest?: number;
}

export interface GateVerdict {
  analysis: Analysis;
  evidence: Evidence;
  /** The report's notes: the caller's, then what the evidence and the champion say. */
  notes: string[];
  report: string;
  artifacts: Artifacts;
}

/** A challenger against the champion, pooled with its earlier runs, judged and reported. */
export async function gate(host: HostClient, config: GateConfig, r: GateRun): Promise<GateVerdict> {
  const { outDir, notes: given = [], runUrl, pullRequest, ...measurement } = r;
  // Each result is kept before deciding: a run that cannot be judged (a disturbed generator) is still evidence.
  const judged = await measureAndDecide(host, config, { ...measurement, kind: "ab", pool: true }, (documents) => writeResults(outDir, documents));
  const { evidence, status } = judged;
  // The budget needs main's last 30 days from the host's history; then the gate joins that history.
  const analysis = await withBudgetOf(host, config, judged.analysis);
  const kept = await keepGate(host, analysis, evidence, { pullRequest, url: runUrl });
  const sha = r.challenger.sha;
  const notes = [...given, ...budgetNotes(analysis), ...identityNotes(analysis, evidence.documents), ...evidenceNotes(sha, evidence), ...candidateNote(analysis, sha, status.champion), ...kept];
  const report = markdownReport(analysis, { notes, runUrl });
  return { analysis, evidence, notes, report, artifacts: writeArtifacts(outDir, { analysis, report, documents: evidence.documents }) };
}
