// measure: one gate's evidence from a host. It deploys the challenger when given a build, runs
// every workload and rate of the config (one run each), waits for each, reads its validated
// result, and pools the host's earlier finished runs of the same build against the same
// champion with the same identity. Shared by every action mode and the CLI.

import { identityDifferences } from "../analysis/identity";
import type { NamedResult } from "../analysis/verdict";
import { resultKey } from "../analysis/verdict";
import { type GateConfig, type PlannedRun, planRuns } from "../config/gate-config";
import type { Kind } from "../contract/plan";
import { comparisonKey } from "../contract/rules";
import { type BenchmarkHost, HostError } from "../host/client";

export interface Progress {
  /** A line to keep (a deploy, a run starting). */
  note: (line: string) => void;
  /** A progress line from the host (a slice done); a terminal may redraw it in place. */
  line: (line: string) => void;
  /** A run about to start, as planned (its workload, rate and slice design). */
  runStart?: (run: PlannedRun, runId: string) => void;
  runEnd?: () => void;
}

export interface Measurement {
  kind: Kind;
  /** The challenger of an A/B run: its SHA, and the build to deploy first when given. */
  challenger?: { sha: string; artifact?: string };
  /** comparison_base merge-base: the build the champion arm runs instead of the champion, deployed first when given. */
  mergeBase?: { sha: string; artifact?: string };
  /** A drift run: an earlier champion the host kept, run in the champion arm (the champion is the challenger). */
  ancestor?: { sha: string };
  /** Unique per job; run ids are `${runIdPrefix}-${index}`. */
  runIdPrefix: string;
  /** One seed per job: the load generator's and the analysis's. */
  seed: number;
  /** When to stop waiting out a host busy with another run (ms since the epoch). */
  busyDeadline: number;
  /** Pool the host's earlier finished runs of this challenger (A/B only). */
  pool: boolean;
  progress: Progress;
}

export interface Evidence {
  /** The pooled earlier runs first, then the new ones. */
  results: NamedResult[];
  /** The host's result documents, as received, in the same order. */
  documents: unknown[];
  /** Earlier runs pooled with the new ones. */
  pooled: string[];
  /** Earlier runs left out: they measured another champion, or ran as another identity (what differs). */
  otherChampion: string[];
  otherIdentity: { runId: string; differs: string[] }[];
  /** Earlier runs left out because the host's answer is not a result that could have been measured (why). */
  unreadable: { runId: string; why: string }[];
}

export async function measure(host: BenchmarkHost, config: GateConfig, m: Measurement): Promise<Evidence> {
  const challengerSha = m.kind === "ab" ? m.challenger?.sha : undefined;
  if (m.kind === "ab" && !challengerSha) throw new Error("measure: an A/B run needs a challenger");
  if (challengerSha && m.challenger?.artifact)
    m.progress.note(await host.deploy("challenger", challengerSha, m.challenger.artifact));
  // The merge base is main's code, as a champion is: it runs in the champion's arm.
  if (m.mergeBase?.artifact) m.progress.note(await host.deploy("champion", m.mergeBase.sha, m.mergeBase.artifact));
  const fresh = noEvidence();
  for (const run of planRuns(
    config,
    { challengerSha, mergeBaseSha: m.mergeBase?.sha, ancestorSha: m.ancestor?.sha },
    m.seed,
  )) {
    const runId = `${m.runIdPrefix}-${run.index}`.toLowerCase();
    m.progress.runStart?.(run, runId);
    try {
      await host.start(m.kind === "ab" ? "run" : "aa", runId, run.request, m.busyDeadline);
      const outcome = await host.wait(runId, m.progress.line);
      if (outcome.status !== "ok") {
        throw new HostError(
          "run_failed",
          `${run.workload} @ ${run.rate} req/s: ${outcome.error_kind ?? outcome.status}: ${outcome.message ?? ""}`,
          outcome.error_kind,
        );
      }
      const { document, message } = await host.result(runId);
      fresh.documents.push(document);
      fresh.results.push({ name: runId, result: message });
    } finally {
      m.progress.runEnd?.();
    }
  }
  return m.pool && challengerSha ? withEarlierRuns(host, challengerSha, fresh) : fresh;
}

/**
 * Adds the host's earlier finished runs of the same challenger, against the same champion, at
 * the same workloads and rates and of the same identity (the builds as deployed, each arm's
 * service spec, the placement, the generator's settings): a rerun adds evidence, and the
 * verdict engine tightens its confidence for each look.
 */
async function withEarlierRuns(host: BenchmarkHost, challengerSha: string, fresh: Evidence): Promise<Evidence> {
  const newIds = new Set(fresh.results.map((r) => r.result.plan.run_id));
  const byKey = new Map(fresh.results.map((r) => [resultKey(r.result), r.result]));
  const champion = fresh.results[0]?.result.plan.builds?.champion_sha;
  const earlier = (await host.runsOf(challengerSha)).filter(
    (r) =>
      r.kind === "ab" && r.status === "ok" && !newIds.has(r.run_id) && byKey.has(comparisonKey(r.workload, r.rate)),
  );
  const out = noEvidence();
  for (const r of earlier) {
    if (r.champion_sha !== champion) {
      out.otherChampion.push(r.run_id);
      continue;
    }
    let answer: Awaited<ReturnType<BenchmarkHost["result"]>>;
    try {
      answer = await host.result(r.run_id);
    } catch (e) {
      // One earlier run the host answers wrongly for must not fail every later rerun.
      if (!(e instanceof HostError && e.kind === "protocol")) throw e;
      out.unreadable.push({ runId: r.run_id, why: e.message });
      continue;
    }
    const { document, message } = answer;
    const differs = identityDifferences(message, byKey.get(resultKey(message))!);
    if (differs.length > 0) {
      out.otherIdentity.push({ runId: r.run_id, differs });
      continue;
    }
    out.documents.push(document);
    out.results.push({ name: r.run_id, result: message });
    out.pooled.push(r.run_id);
  }
  out.results.push(...fresh.results);
  out.documents.push(...fresh.documents);
  return out;
}

function noEvidence(): Evidence {
  return { results: [], documents: [], pooled: [], otherChampion: [], otherIdentity: [], unreadable: [] };
}

/** A reproducible seed from a commit (or any hex digest). */
export function seedOf(sha: string): number {
  return Number.parseInt(sha.slice(0, 12), 16);
}
