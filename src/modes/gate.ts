// mode: gate — the automatic check on a pull request: decide whether the PR's code may run on
// the host, deploy it as the challenger, run every workload and rate, pool earlier runs of the
// same commit, analyse, and report. `gatePullRequest` is shared with /perf rerun.
import { existsSync } from "node:fs";
import * as core from "@actions/core";
import { type Access, APPROVAL_LABEL, decideAccess } from "../access";
import { ConfigError } from "../config";
import { parsePullRequestEvent } from "../event";
import { judge, runExperiments, seedOf, withEarlierRuns } from "../experiment";
import { GitHub, type PullRequestState } from "../github/client";
import { type HostClient, HostError } from "../host/client";
import { InputError, type Inputs, requireArtifact } from "../inputs";
import { configAt } from "../repo-config";
import { gateOutcome } from "../report/gate-outcome";
import { busyDeadline, connectHost, outputDir, readEvent, type RunnerEnv } from "../runner";

export async function runGate(inputs: Inputs, env: RunnerEnv): Promise<void> {
  const event = parsePullRequestEvent(env.eventName, readEvent(env));
  const gh = new GitHub(inputs["github-token"], event.owner, event.repo, (l) => core.info(l));
  if (event.isFork && event.action === "synchronize") {
    // A new push voids the approval of the previous head.
    await gh.removeLabel(event.number, APPROVAL_LABEL);
  }
  const pr = { number: event.number, headSha: event.headSha, baseSha: event.baseSha, baseRef: event.baseRef };
  await gatePullRequest(gh, pr, inputs, env, {
    authorize: async () => decideAccess(event, event.isFork && event.label === APPROVAL_LABEL ? await gh.permission(event.sender) : null),
  });
}

export type PullRequestRef = Pick<PullRequestState, "number" | "headSha" | "baseSha" | "baseRef">;

export interface GateOptions {
  /** Whether this head may run on the host; asked after the check run shows "measuring". */
  authorize: () => Promise<Access>;
  /** Lines for the report, after the headline. */
  notes?: string[];
}

/** Measures a pull request's head against the champion and reports on the check run, labels and comment. */
export async function gatePullRequest(gh: GitHub, pr: PullRequestRef, inputs: Inputs, env: RunnerEnv, o: GateOptions): Promise<void> {
  const check = await gh.startCheck(pr.headSha, "perf-gate: measuring");
  const outDir = outputDir(inputs, env);
  let host: HostClient | null = null;
  try {
    const access = await o.authorize();
    if (!access.allowed) {
      core.notice(access.reason);
      await gh.finishCheck(check, "neutral", "perf-gate: waiting for approval", `**Not run.** ${access.reason}.`);
      core.setOutput("verdict", "skipped");
      return;
    }
    core.info(`access: ${access.reason}`);
    // From the base branch's commit: a pull request cannot loosen its own gate.
    const config = await configAt(gh, inputs.config, pr.baseSha, ` on the base branch ${pr.baseRef}; the gate reads its config from the base branch so that a pull request cannot change its own gate`);
    const artifact = requireArtifact(inputs, existsSync);
    host = connectHost(inputs);
    const sha = pr.headSha;
    core.info(await host.deploy("challenger", sha, artifact));
    const fresh = await runExperiments(host, config, {
      kind: "run",
      challengerSha: sha,
      runIdPrefix: `pr${pr.number}-${sha.slice(0, 7)}-${env.runId}-${env.runAttempt}`,
      seed: seedOf(sha),
      busyDeadline: busyDeadline(inputs),
      onLine: (line) => core.info(line),
      onRunStart: (workload, rate, runId) => core.startGroup(`${workload} @ ${rate} req/s (run ${runId})`),
      onRunEnd: () => core.endGroup(),
    });
    const evidence = await withEarlierRuns(host, sha, fresh);
    const status = await host.status();
    const notes = [...(o.notes ?? []), ...evidenceNotes(sha, evidence.pooled, evidence.otherChampion)];
    const { analysis, report, reportPath, resultPath } = judge(evidence.experiments, config, status, seedOf(sha), outDir, (a) => [
      ...notes,
      ...(a.verdict === "green" ? [`🏆 **Candidate champion**: ${sha.slice(0, 7)} is faster than the champion ${status.champion.slice(0, 7)}; merging it makes it the champion.`] : []),
    ]);
    const outcome = gateOutcome(analysis);

    await gh.finishCheck(check, outcome.conclusion, outcome.title, report);
    if (await stillHead(gh, pr)) {
      await gh.setVerdictLabel(pr.number, outcome.label);
      core.info(`sticky comment ${await gh.upsertStickyComment(pr.number, report)}`);
    }
    await core.summary.addRaw(report).write();
    const h = analysis.headline;
    core.setOutput("verdict", analysis.verdict);
    core.setOutput("blocking", String(analysis.blocking));
    core.setOutput("estimate-ms", String(h.estimateMs));
    core.setOutput("ci-low-ms", String(h.ciMs[0]));
    core.setOutput("ci-high-ms", String(h.ciMs[1]));
    core.setOutput("pairs", String(h.pairs));
    core.setOutput("report-path", reportPath);
    core.setOutput("result-path", resultPath);
    core.info(outcome.title);
    if (analysis.blocking) core.setFailed(`perf-gate: ${outcome.title}`);
  } catch (e) {
    await reportFailure(gh, check, pr, inputs, e as Error);
  } finally {
    host?.close();
  }
}

function evidenceNotes(sha: string, pooled: string[], otherChampion: string[]): string[] {
  const out: string[] = [];
  if (pooled.length > 0) {
    out.push(`🔁 **Rerun**: pooled with ${pooled.length} earlier run${pooled.length === 1 ? "" : "s"} of ${sha.slice(0, 7)} (${pooled.join(", ")}); the interval is at the lower confidence each further look needs.`);
  }
  if (otherChampion.length > 0) {
    out.push(`${otherChampion.length} earlier run${otherChampion.length === 1 ? "" : "s"} of ${sha.slice(0, 7)} (${otherChampion.join(", ")}) measured another champion and ${otherChampion.length === 1 ? "is" : "are"} not pooled.`);
  }
  return out;
}

/**
 * Labels and the sticky comment describe the PR as it is now. If a push moved its head while
 * this ran, this verdict stays on its commit's check run and the new head's run labels the PR.
 */
async function stillHead(gh: GitHub, pr: PullRequestRef): Promise<boolean> {
  const now = await gh.pullRequest(pr.number);
  if (now.headSha === pr.headSha) return true;
  core.warning(`the pull request's head moved to ${now.headSha.slice(0, 7)} while ${pr.headSha.slice(0, 7)} was measured; its verdict is on its check run only`);
  return false;
}

/** Infrastructure and configuration failures: said as such, never as a performance verdict. */
async function reportFailure(gh: GitHub, check: number, pr: PullRequestRef, inputs: Inputs, e: Error): Promise<void> {
  const config = e instanceof ConfigError || e instanceof InputError;
  const kind = e instanceof HostError ? e.kind : config ? "configuration" : "internal";
  const title = config ? "perf-gate: configuration error" : `perf-gate could not measure (${kind.replace(/_/g, " ")})`;
  const body = `**${title}.** This is ${config ? "a configuration problem" : "an infrastructure failure"}, not a performance verdict.\n\n\`\`\`\n${e.message}\n\`\`\`\n`;
  const fail = config || inputs["on-infrastructure-failure"] === "fail";
  try {
    await gh.finishCheck(check, fail ? "failure" : "neutral", title, body);
    if (await stillHead(gh, pr)) {
      // The labels described an earlier head; they would lie about this one.
      await gh.setVerdictLabel(pr.number, null);
      await gh.upsertStickyComment(pr.number, `## perf-gate: ⚠️ not measured\n\n${body}`);
    }
  } catch (ghError) {
    core.warning(`could not report the failure on GitHub: ${(ghError as Error).message}`);
  }
  core.setOutput("verdict", "error");
  if (fail) core.setFailed(`${title}: ${e.message}`);
  else core.warning(`${title}: ${e.message}`);
}
