// mode: gate — the automatic check on a pull request: decide whether the PR's code may run on
// the host, deploy it as the challenger, run every workload and rate, pool earlier runs of the
// same commit, analyse (extending an unclear comparison), and report. `gatePullRequest` is shared with /perf rerun.
import { existsSync } from "node:fs";
import * as core from "@actions/core";
import { CouldNotMeasureError, FailingWorkloadError } from "../../analysis/unmeasured";
import { ConfigError, type GateConfig } from "../../config/gate-config";
import { writeUnmeasured } from "../../experiment/artifacts";
import { type GateVerdict, gate } from "../../experiment/gate";
import { seedOf } from "../../experiment/measure";
import { onPool } from "../../experiment/pool-gate";
import type { HostPool } from "../../host/pool";
import { failureWords } from "../../report/failure";
import { codeBlock } from "../../report/format";
import { gateOutcome } from "../../report/gate-outcome";
import { type Access, decidesNothing } from "../approval";
import { parsePullRequestEvent } from "../event";
import { GitHub, type PullRequestState } from "../github/client";
import { InputError } from "../inputs";
import { connectPool, type Job, logProgress, requireArtifact } from "../job";
import { configAt } from "../repo-config";
import { readEvent } from "../runner";
import { accessOf, refuseAccess } from "./access";
import { comparedMergeBase, mergeBaseBuild } from "./merge-base";

export async function runGate(job: Job): Promise<void> {
  const event = parsePullRequestEvent(job.runner.eventName, readEvent(job.runner));
  if (decidesNothing(event)) {
    core.info(`the ${event.label} label decides nothing about ${event.headSha.slice(0, 7)}: nothing to do`);
    return core.setOutput("verdict", "skipped");
  }
  const gh = new GitHub(job.githubToken, event.owner, event.repo, (l) => core.info(l));
  const pr = { number: event.number, headSha: event.headSha, baseSha: event.baseSha, baseRef: event.baseRef };
  // The access job decided before the build; this job takes no earlier job's word.
  await gatePullRequest(gh, pr, job, { authorize: () => accessOf(gh, event) });
}

export type PullRequestRef = Pick<PullRequestState, "number" | "headSha" | "baseSha" | "baseRef">;

export interface GateOptions {
  /** Whether this head may run on the host; asked after the check run shows "measuring". */
  authorize: () => Promise<Access>;
  /** Lines for the report, after the headline. */
  notes?: string[];
}

/** Measures a pull request's head against the champion and reports on the check run, labels and comment. */
export async function gatePullRequest(gh: GitHub, pr: PullRequestRef, job: Job, o: GateOptions): Promise<void> {
  const check = await gh.startCheck(pr.headSha, "perf-gate: measuring", undefined, job.runUrl);
  let pool: HostPool | null = null;
  try {
    const access = await o.authorize();
    if (!access.allowed) return await refuseAccess(gh, pr.number, { sha: pr.headSha, check }, access);
    core.info(`access: ${access.reason}`);
    // From the base branch's commit: a pull request cannot loosen its own gate.
    const config = await configAt(
      gh,
      job.configPath,
      pr.baseSha,
      ` on the base branch ${pr.baseRef}; the gate reads its config from the base branch so that a pull request cannot change its own gate`,
    );
    const artifact = requireArtifact(job, existsSync);
    pool = connectPool(job);
    const judged = await judgePullRequest(gh, pool, config, pr, artifact, job, o.notes ?? []);
    await publishVerdict(gh, check, pr, judged);
    setVerdictOutputs(judged);
  } catch (e) {
    await reportFailure(gh, check, pr, job, e as Error);
  } finally {
    pool?.close();
  }
}

type Judged = Pick<GateVerdict, "analysis" | "report" | "artifacts">;

/**
 * Deploys and measures the head on the host it lands on (the host of its earlier runs, else a
 * free one of the pool), pooled with its earlier runs there, and judges it against that host's floors.
 */
async function judgePullRequest(
  gh: GitHub,
  pool: HostPool,
  config: GateConfig,
  pr: PullRequestRef,
  artifact: string,
  job: Job,
  notes: string[],
): Promise<Judged> {
  const sha = pr.headSha;
  const runIdPrefix = `pr${pr.number}-${sha.slice(0, 7)}-${job.attempt}`;
  const mergeBase = await comparedMergeBase(gh, config, pr);
  const landed = await onPool(
    pool,
    { key: runIdPrefix, sha, mergeBase, busyDeadline: job.busyDeadline, say: (l) => core.info(l) },
    async ({ client }, landing) => {
      // Where it measures, also when it then cannot: a failure's report names no host otherwise.
      core.setOutput("host", landing.host);
      const base = await mergeBaseBuild(client, mergeBase, pr, job, existsSync);
      return gate(client, config, {
        challenger: { sha, artifact },
        mergeBase: base.build,
        runIdPrefix,
        seed: seedOf(sha),
        busyDeadline: job.busyDeadline,
        progress: logProgress(""),
        outDir: job.outputDir,
        notes: () => [...notes, ...landing.notes(), ...(base.note ? [base.note] : [])],
        runUrl: job.runUrl,
        host: landing.host,
        pullRequest: pr.number,
      });
    },
  );
  return landed.value;
}

/**
 * The verdict on the check run, and (if the PR has not moved on) its labels and sticky comment.
 * Once the check holds the verdict, nothing after it may change it: a label or comment GitHub
 * refuses (a rate limit) is a warning, never a failure report over the verdict.
 */
async function publishVerdict(
  gh: GitHub,
  check: number,
  pr: PullRequestRef,
  { analysis, report }: Judged,
): Promise<void> {
  const outcome = gateOutcome(analysis);
  await gh.finishCheck(check, outcome.conclusion, outcome.title, report);
  try {
    if (await stillHead(gh, pr)) {
      await gh.setVerdictLabel(pr.number, outcome.label);
      core.info(`sticky comment ${await gh.upsertStickyComment(pr.number, report)}`);
    }
    await core.summary.addRaw(report).write();
  } catch (e) {
    core.warning(
      `the verdict is on the check run, but the labels, the sticky comment or the job summary could not be updated: ${(e as Error).message}`,
    );
  }
  core.info(outcome.title);
  if (analysis.blocking) core.setFailed(`perf-gate: ${outcome.title}`);
}

function setVerdictOutputs({ analysis, artifacts }: Judged): void {
  const h = analysis.headline;
  core.setOutput("verdict", analysis.verdict);
  core.setOutput("blocking", String(analysis.blocking));
  core.setOutput("estimate-ms", String(h.estimateMs));
  core.setOutput("ci-low-ms", String(h.ciMs[0]));
  core.setOutput("ci-high-ms", String(h.ciMs[1]));
  core.setOutput("pairs", String(h.pairs));
  core.setOutput("report-path", artifacts.reportPath);
  core.setOutput("result-path", artifacts.resultPath);
  core.setOutput("profile-paths", (artifacts.profilePaths ?? []).join("\n"));
}

/**
 * Labels and the sticky comment describe the PR as it is now. If a push moved its head while
 * this ran, this verdict stays on its commit's check run and the new head's run labels the PR.
 */
async function stillHead(gh: GitHub, pr: PullRequestRef): Promise<boolean> {
  const now = await gh.pullRequest(pr.number);
  if (now.headSha === pr.headSha) return true;
  core.warning(
    `the pull request's head moved to ${now.headSha.slice(0, 7)} while ${pr.headSha.slice(0, 7)} was measured; its verdict is on its check run only`,
  );
  return false;
}

/**
 * A failure, said as what it is (report/failure.ts): the configuration's and the pull request's
 * build's are a failure whatever on-infrastructure-failure says, which covers the host's alone.
 */
async function reportFailure(gh: GitHub, check: number, pr: PullRequestRef, job: Job, e: Error): Promise<void> {
  const { kind, title, said } = failureWords(
    e,
    e instanceof ConfigError || e instanceof InputError || e instanceof FailingWorkloadError,
  );
  // What was measured, when the runs ended: the same report the artifacts hold.
  const explained = e instanceof CouldNotMeasureError ? e.explained : undefined;
  if (explained) {
    const written = writeUnmeasured(job.outputDir, explained);
    core.setOutput("report-path", written.reportPath);
    core.setOutput("result-path", written.resultPath);
  }
  const body = explained ? `${said}\n\n${explained.markdown}` : `${said}\n\n${codeBlock(e.message)}\n`;
  const fail = kind !== "infrastructure" || job.onInfrastructureFailure === "fail";
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
