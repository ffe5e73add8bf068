// The gate's and the calibration's part in the host's history: the budget read from it before a
// verdict is final, the finished gate kept in it, and the drift run against an ancestor.
import { withBudget } from "../analysis/budget";
import { type GateContext, gateRecord } from "../analysis/gate-record";
import {
  type ChangePoint,
  type DriftPoint,
  driftAncestor,
  driftPoints,
  historyChangePoints,
} from "../analysis/main-history";
import { CouldNotMeasureError } from "../analysis/unmeasured";
import type { Analysis } from "../analysis/verdict";
import type { GateConfig } from "../config/gate-config";
import type { DriftRecord, History } from "../contract/history";
import type { BenchmarkHost } from "../host/client";
import { firstLine } from "../report/format";
import { decide } from "./decide";
import { type Evidence, type Measurement, measure } from "./measure";

/** The analysis with the budget's accounts, when the config sets a budget; the history it read. */
export async function withBudgetOf(host: BenchmarkHost, config: GateConfig, analysis: Analysis): Promise<Analysis> {
  const limit = config.budget?.percent_per_30_days;
  if (limit === undefined) return analysis;
  let history: History;
  try {
    history = (await host.history()).message;
  } catch (e) {
    // A budget that cannot be kept must not pass in silence.
    throw new Error(
      `budget: the host's history could not be read, so the regression budget cannot be kept (${(e as Error).message}); a perf-host that keeps a history is needed, or leave budget out of the config`,
    );
  }
  return withBudget(analysis, history, limit);
}

/**
 * Keeps the finished gate in the host's history (gate-record, anchored on its last run). A host
 * that refuses it does not change the verdict, which stands on its runs: the report says so.
 */
export async function keepGate(
  host: BenchmarkHost,
  analysis: Analysis,
  evidence: Evidence,
  o: GateContext,
): Promise<string[]> {
  const anchor = evidence.results.at(-1)?.result.plan.run_id;
  if (!anchor) return [];
  try {
    await host.recordGate(anchor, gateRecord(analysis, evidence.results, o));
    return [];
  } catch (e) {
    return [
      `**History**: this gate is not in the host's history (${firstLine(e)}); its verdict stands on its runs, but the regression budget and the history page will not count it.`,
    ];
  }
}

export interface DriftRun {
  /** The drift runs recorded now, each with the steps merged since its ancestor. */
  points: DriftPoint[];
  /** Every change point in the history. */
  changePoints: ChangePoint[];
  /** Why no drift was measured, when none was. */
  skipped: string | null;
  documents: unknown[];
}

/**
 * The champion against the ancestor of 30 or more days ago, for every workload and rate of the
 * config, with the gate's interleaved protocol; each interval is kept in the host's history as
 * a drift record. A host without a history or an ancestor that old, or a run that could not
 * measure, skips it and says why: the calibration stands without it.
 */
export async function measureDrift(
  host: BenchmarkHost,
  config: GateConfig,
  o: Omit<Measurement, "kind" | "challenger" | "pool" | "ancestor">,
): Promise<DriftRun> {
  const skip = (skipped: string, history?: History): DriftRun => ({
    points: [],
    changePoints: history ? historyChangePoints(history) : [],
    skipped,
    documents: [],
  });
  let history: History;
  try {
    history = (await host.history()).message;
  } catch (e) {
    return skip(`No drift run: the host's history could not be read (${firstLine(e)}).`);
  }
  const ancestor = driftAncestor(history);
  if (!ancestor || !history.champion) {
    return skip(
      "No drift run: the host keeps no champion promoted 30 or more days ago, or main has not changed since then.",
      history,
    );
  }
  let analysis: Analysis;
  let evidence: Evidence;
  try {
    evidence = await measure(host, config, {
      ...o,
      kind: "ab",
      challenger: { sha: history.champion },
      ancestor: { sha: ancestor.sha },
      pool: false,
    });
    analysis = decide(evidence.results, config, { seed: o.seed });
  } catch (e) {
    if (!(e instanceof CouldNotMeasureError)) throw e;
    return skip(
      `No drift recorded: the drift run against \`${ancestor.sha.slice(0, 7)}\` could not measure (${e.brief}).`,
      history,
    );
  }
  for (const c of analysis.comparisons) {
    const record: DriftRecord = {
      workload: c.workload,
      rate: c.rate,
      percentile: analysis.percentile,
      champion_sha: history.champion,
      ancestor_sha: ancestor.sha,
      estimate_ms: c.estimateMs,
      ci_ms: c.ciMs,
      ancestor_ms: c.champion.sloMs,
      pairs: c.pairs,
    };
    await host.recordDrift(c.runs.at(-1)!, record);
  }
  const after = (await host.history()).message;
  const recorded = new Set(analysis.comparisons.map((c) => c.runs.at(-1)));
  const points = analysis.comparisons.flatMap((c) =>
    driftPoints(after, c.key, analysis.percentile).filter((d) => d.runId !== null && recorded.has(d.runId)),
  );
  return { points, changePoints: historyChangePoints(after), skipped: null, documents: evidence.documents };
}
