// A finished gate as the host's history keeps it (contract GateRecord): what was compared, and
// per workload and rate the verdict, estimate, interval, floor, pairs, resources, the runs'
// identity and the budget's account. The host computes no verdicts: this is the client's. Pure.
import type { ComparisonRecord, GateRecord } from "../contract/history";
import { identityOf } from "./identity";
import { type Analysis, type NamedResult, resultKey } from "./verdict";

export interface GateContext {
  /** The pull request the gate measured, if any. */
  pullRequest?: number;
  /** The workflow run, where the report is. */
  url?: string;
}

/** The record of an A/B analysis; its results give each comparison's identity. */
export function gateRecord(a: Analysis, results: readonly NamedResult[], o: GateContext = {}): GateRecord {
  if (a.builds?.kind !== "ab") throw new Error("gate record: only an A/B gate's analysis is a gate");
  const identity = new Map(results.map((r) => [resultKey(r.result), identityOf(r.result)?.digest]));
  const comparisons = a.comparisons.map((c): ComparisonRecord => {
    const digest = identity.get(c.key);
    const cpu = c.resources?.cpuUsPerRequest?.percent;
    const rss = c.resources?.rssBytes?.percent;
    return {
      workload: c.workload,
      rate: c.rate,
      verdict: c.verdict,
      blocking: c.blocking,
      ...(c.blockedBy.length > 0 ? { blocked_by: c.blockedBy } : {}),
      estimate_ms: c.estimateMs,
      ci_ms: c.ciMs,
      champion_ms: c.champion.sloMs,
      ...(c.floorMs !== null ? { floor_ms: c.floorMs } : {}),
      threshold_ms: c.thresholdMs,
      pairs: c.pairs,
      ...(cpu !== undefined ? { cpu_percent: cpu } : {}),
      ...(rss !== undefined ? { rss_percent: rss } : {}),
      ...(digest && /^[0-9a-f]{64}$/.test(digest) ? { identity: digest } : {}),
      ...(c.budget ? { budget: c.budget } : {}),
    };
  });
  return {
    ...(o.pullRequest !== undefined ? { pull_request: o.pullRequest } : {}),
    challenger_sha: a.builds.challenger_sha,
    champion_sha: a.builds.champion_sha,
    base: a.builds.base ?? "champion",
    verdict: a.verdict,
    blocking: a.blocking,
    percentile: a.percentile,
    comparisons,
    runs: [...new Set(a.runs.map((r) => r.runId))],
    ...(o.url && /^https?:\/\/[^\s"'<>]{1,1000}$/.test(o.url) ? { url: o.url } : {}),
  };
}
