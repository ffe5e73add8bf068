// The gate's one sequence, for the action's gate mode (and /perf rerun) and `perf-gate run`:
// measure (extending unclear comparisons), keep every result before deciding, decide against
// the host's floors, then the report with its notes, and the artifacts beside it.
import type { Analysis } from "../analysis/verdict";
import type { GateConfig } from "../config/gate-config";
import type { BenchmarkHost } from "../host/client";
import { budgetNotes } from "../report/budget";
import { profiledRuns, profilePath } from "../report/functions";
import { markdownReport } from "../report/markdown";
import { candidateNote, evidenceNotes, identityNotes } from "../report/notes";
import { type Artifacts, writeArtifacts, writeProfiles, writeResults } from "./artifacts";
import { measureAndDecide } from "./extend";
import { keepGate, withBudgetOf } from "./history";
import type { Evidence, Measurement } from "./measure";

export interface GateRun extends Omit<Measurement, "kind" | "pool" | "challenger"> {
  challenger: { sha: string; artifact?: string };
  /** Where report.md, analysis.json, chart.svg and result.json go. */
  outDir: string;
  /**
   * Lines for the report, before the gate's own notes; a function is asked once the gate has
   * measured (a pool's note says how long the gate waited for its host).
   */
  notes?: string[] | (() => string[]);
  runUrl?: string;
  /** The pull request measured, for the host's history. */
  pullRequest?: number;
  /** The host it runs on, as the pool names it: the report and analysis.json say where it was measured. */
  host?: string;
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
export async function gate(host: BenchmarkHost, config: GateConfig, r: GateRun): Promise<GateVerdict> {
  const { outDir, notes: caller = [], runUrl, host: hostName, pullRequest, ...measurement } = r;
  // Each result is kept before deciding: a run that cannot be judged (a disturbed generator) is still evidence.
  const judged = await measureAndDecide(host, config, { ...measurement, kind: "ab", pool: true }, (documents) =>
    writeResults(outDir, documents),
  );
  const { evidence, status } = judged;
  // The budget needs main's last 30 days from the host's history; then the gate joins that history.
  const analysis = await withBudgetOf(host, config, judged.analysis);
  const kept = await keepGate(host, analysis, evidence, { pullRequest, url: runUrl });
  const sha = r.challenger.sha;
  const given = typeof caller === "function" ? caller() : caller;
  const functions = showsFunctions(config, analysis);
  const fetched = functions ? await fetchProfiles(host, analysis) : { profiles: [], notes: [] };
  const notes = [
    ...given,
    ...budgetNotes(analysis),
    ...identityNotes(analysis, evidence.documents),
    ...evidenceNotes(sha, evidence),
    ...candidateNote(analysis, sha, status.champion),
    ...kept,
    ...fetched.notes,
  ];
  const report = markdownReport(analysis, { notes, runUrl, functions, host: hostName });
  const artifacts = writeArtifacts(outDir, { analysis, report, documents: evidence.documents, host: hostName });
  return {
    analysis,
    evidence,
    notes,
    report,
    artifacts: { ...artifacts, profilePaths: writeProfiles(outDir, fetched.profiles) },
  };
}

/** Whether the report shows the functions that moved: on a red verdict (profile: on-red), on every one (always). */
export function showsFunctions(config: Pick<GateConfig, "profile">, analysis: Pick<Analysis, "verdict">): boolean {
  return config.profile === "always" || (config.profile === "on-red" && analysis.verdict === "red");
}

/** Each profiled run's two profiles, from the host, at the paths the report names. */
async function fetchProfiles(
  host: BenchmarkHost,
  analysis: Analysis,
): Promise<{ profiles: { path: string; bytes: Uint8Array }[]; notes: string[] }> {
  const runs = profiledRuns(analysis.comparisons);
  const files = analysis.comparisons.flatMap((c) => c.functions.files);
  const profiles: { path: string; bytes: Uint8Array }[] = [];
  for (const f of files) {
    try {
      profiles.push({ path: profilePath(f.run, f.file, runs), bytes: await host.profile(f.run, f.arm) });
    } catch (e) {
      return {
        profiles: [],
        notes: [
          `> ⚠️ The profiles could not be fetched from the host (${(e as Error).message}); the functions that moved are listed from the result.`,
        ],
      };
    }
  }
  return { profiles, notes: [] };
}
