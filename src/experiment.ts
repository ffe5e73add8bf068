// One gate's experiments on a host: a run per workload and rate, each waited for and its
// result validated. Shared by the action and `perf-gate run`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseResult } from "./analysis/result-schema";
import { type Calibration, calibrations, excludesZero, floorRecord, floorSettings, type StoredFloor } from "./calibration";
import { type Analysis, analyze, type Comparison, comparisonKey, defaultSettings, type GateSettings, type NamedResult } from "./analysis/verdict";
import { configFor, planRuns, type GateConfig } from "./config";
import { type HostClient, HostError, type HostStatus } from "./host/client";
import { svgChart } from "./report/chart";
import { analysisJson } from "./report/json";
import { markdownReport } from "./report/markdown";

export interface ExperimentOptions {
  kind: "run" | "aa";
  /** The deployed challenger release (not used by an A/A run). */
  challengerSha?: string;
  /** Unique per gate invocation; run-ids are `${runIdPrefix}-${index}`. */
  runIdPrefix: string;
  seed: number;
  busyDeadline: number;
  onLine: (line: string) => void;
  onRunStart?: (workload: string, rate: number, runId: string) => void;
  onRunEnd?: () => void;
}

export interface Experiments {
  results: NamedResult[];
  /** The host's result documents, as received. */
  documents: unknown[];
}

export async function runExperiments(host: HostClient, config: GateConfig, o: ExperimentOptions): Promise<Experiments> {
  const out: Experiments = { results: [], documents: [] };
  for (const run of planRuns(config, o.kind === "run" ? o.challengerSha : undefined, o.seed)) {
    const runId = `${o.runIdPrefix}-${run.index}`.toLowerCase();
    o.onRunStart?.(run.workload, run.rate, runId);
    try {
      await host.start(o.kind, runId, run.plan, o.busyDeadline);
      const outcome = await host.wait(runId, o.onLine);
      if (outcome.status !== "ok") {
        throw new HostError("run_failed", `${run.workload} @ ${run.rate} req/s: ${outcome.error_kind ?? outcome.status}: ${outcome.message ?? ""}`);
      }
      const doc = await host.result(runId);
      out.documents.push(doc);
      out.results.push({ name: runId, result: parseResult(runId, doc) });
    } finally {
      o.onRunEnd?.();
    }
  }
  return out;
}

export interface PooledEvidence {
  experiments: Experiments;
  /** Earlier runs of this build pooled with the new ones. */
  pooled: string[];
  /** Earlier runs of this build left out because they ran against another champion. */
  otherChampion: string[];
}

/**
 * Adds the host's earlier finished runs of the same challenger, against the same champion and
 * at the same workloads and rates, to new experiments: a rerun adds evidence, and the verdict
 * engine tightens its confidence for each look.
 */
export async function withEarlierRuns(host: HostClient, challengerSha: string, current: Experiments): Promise<PooledEvidence> {
  const newIds = new Set(current.results.map((r) => r.result.plan.run_id));
  const keys = new Set(current.results.map((r) => comparisonKey(r.result)));
  const champion = current.results[0]?.result.plan.meta?.champion_sha;
  const earlier = (await host.runsOf(challengerSha)).filter(
    (r) => r.kind === "ab" && r.status === "ok" && !newIds.has(r.run_id) && keys.has(`${r.workload}@${r.rate}`),
  );
  const out: PooledEvidence = { experiments: { results: [], documents: [] }, pooled: [], otherChampion: [] };
  for (const r of earlier) {
    if (r.champion_sha !== champion) {
      out.otherChampion.push(r.run_id);
      continue;
    }
    const doc = await host.result(r.run_id);
    out.experiments.documents.push(doc);
    out.experiments.results.push({ name: r.run_id, result: parseResult(r.run_id, doc) });
    out.pooled.push(r.run_id);
  }
  out.experiments.results.push(...current.results);
  out.experiments.documents.push(...current.documents);
  return out;
}

/** A reproducible seed from a commit (or any hex digest). */
export function seedOf(sha: string): number {
  return Number.parseInt(sha.slice(0, 12), 16);
}

export interface Judgement {
  analysis: Analysis;
  report: string;
  reportPath: string;
  resultPath: string;
}

/** The verdict engine's settings from the gate config (without the host's floors). */
export function gateSettings(config: GateConfig, seed: number): GateSettings {
  return {
    ...defaultSettings,
    percentile: config.slo.percentile,
    sloBudgetMs: config.slo.budget_ms,
    blockThresholdPercent: config.block_threshold_percent,
    seed,
  };
}

/**
 * Analyses the results with the host's A/A floors and writes result.json (the host's documents),
 * report.md, analysis.json and chart.svg.
 */
export function judge({ results, documents }: Experiments, config: GateConfig, status: HostStatus, seed: number, outDir: string, notes: (a: Analysis) => string[] = () => []): Judgement {
  const analysis = analyze(results, { ...gateSettings(config, seed), ...floorSettings(status.floors) });
  const report = markdownReport(analysis, { notes: notes(analysis) });
  mkdirSync(outDir, { recursive: true });
  const resultPath = join(outDir, "result.json");
  writeFileSync(resultPath, JSON.stringify(documents, null, 2));
  const reportPath = join(outDir, "report.md");
  writeFileSync(reportPath, report);
  writeFileSync(join(outDir, "analysis.json"), JSON.stringify(analysisJson(analysis), null, 2));
  writeFileSync(join(outDir, "chart.svg"), svgChart(analysis.headline, analysis.percentile));
  return { analysis, report, reportPath, resultPath };
}

/**
 * Stores each A/A comparison as the host's floor for its workload and rate (a biased one too, so
 * that verdicts say so) and returns what each says against the floors stored before. A key whose
 * interval excludes 0 is measured once more first, and that confirmation run is what is stored:
 * an unbiased host excludes 0 by chance in 1 run of 20, both of two independent runs in 1 of
 * 400, while a real bias persists.
 */
export async function recordCalibrations(
  host: HostClient,
  config: GateConfig,
  aa: readonly Comparison[],
  confirm: Omit<ExperimentOptions, "kind" | "challengerSha">,
): Promise<{ calibrations: Calibration[]; history: StoredFloor[]; confirmations: Experiments }> {
  const history = await host.floorHistory();
  const confirmations: Experiments = { results: [], documents: [] };
  const firstRuns = new Map<string, Comparison>();
  const latest: Comparison[] = [];
  for (const [i, c] of aa.entries()) {
    if (!excludesZero(c.ciMs)) {
      latest.push(c);
      continue;
    }
    const again = await runExperiments(host, configFor(config, c.workload, c.rate), { ...confirm, kind: "aa", runIdPrefix: `${confirm.runIdPrefix}-confirm${i}` });
    confirmations.results.push(...again.results);
    confirmations.documents.push(...again.documents);
    firstRuns.set(c.key, c);
    // The raw interval: no floor or earlier bias may colour the calibration itself.
    latest.push(analyze(again.results, gateSettings(config, confirm.seed)).comparisons[0]!);
  }
  const cs = calibrations(latest, history, firstRuns);
  for (const c of cs) await host.recordFloor(c.runId, floorRecord(c));
  return { calibrations: cs, history, confirmations };
}
