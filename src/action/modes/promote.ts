// mode: promote — main's new HEAD (a push, or a SHA given by hand) becomes the champion: deploy
// it, promote it (the host waits for a running gate and health-checks the build first), then
// verify it with a short A/A run and roll back if that fails. mode: rollback — the previous
// champion, kept on the host, becomes the champion again, and is verified the same way.
import { existsSync } from "node:fs";
import * as core from "@actions/core";
import { CouldNotMeasureError } from "../../analysis/unmeasured";
import { championCheck } from "../../report/calibration";
import { configFor, type GateConfig, planRuns } from "../../config/gate-config";
import { parsePushToDefaultBranch } from "../event";
import { writeArtifacts, writeUnmeasured } from "../../experiment/artifacts";
import { decide } from "../../experiment/decide";
import { measure, seedOf } from "../../experiment/measure";
import { GitHub } from "../github/client";
import type { HostClient } from "../../host/client";
import { InputError } from "../inputs";
import { connectHost, type Job, logProgress, requireArtifact } from "../job";
import { configAt } from "../repo-config";
import { armsOf } from "../../report/arms";
import { markdownReport } from "../../report/markdown";
import { quartet } from "../../report/quartet";
import { ownerAndRepo, readEvent } from "../runner";

const PROMOTION_CHECK = "perf-gate / champion";

export async function runPromote(job: Job): Promise<void> {
  const sha = promotedSha(job);
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const check = await gh.startCheck(sha, "perf-gate: promoting to champion", PROMOTION_CHECK, job.runUrl);
  const host = connectHost(job);
  try {
    const config = await configAt(gh, job.configPath, sha);
    const artifact = requireArtifact(job, existsSync);
    const before = await host.status();
    if (before.champion === sha) {
      // Its config may have changed service: the host restarts the champion on the new spec
      // (health-checked as any promotion), or says nothing changed.
      const said = await host.promote(sha, config.service, job.busyDeadline);
      await gh.finishCheck(check, "success", `${sha.slice(0, 7)} is already the champion`, said);
      setChampionOutputs(sha, before.previous);
      return;
    }
    core.info(await host.deploy("champion", sha, artifact));
    // The host records the step main takes: the merged pull request's last gate on it.
    const merged = await gh.mergedPullRequest(sha).catch((e: Error) => {
      core.warning(`perf-gate: which pull request made ${sha.slice(0, 7)} could not be read (${e.message}); the host records the step of the build's own last gate, if any`);
      return null;
    });
    core.info(await host.promote(sha, config.service, job.busyDeadline, merged ?? undefined));
    const verification = await verify(host, config, job, "promote", sha);
    const finish = async (conclusion: "success" | "failure" | "neutral", title: string, detail: string) => {
      await gh.finishCheck(check, conclusion, title, `**${title}.**${detail}\n\n${verification.text}`);
      await core.summary.addRaw(`## perf-gate: ${title}\n\n${verification.text}`).write();
    };
    if (!verification.passed) {
      const restored = await host.rollback(job.busyDeadline);
      const title = `promotion of ${sha.slice(0, 7)} failed its A/A check; rolled back`;
      await finish("failure", title, ` ${restored}`);
      core.setFailed(`perf-gate: ${title}: ${verification.findings.join("; ")}`);
      return;
    }
    const title = `champion is now ${sha.slice(0, 7)} (previous ${short(before.champion)} kept for rollback); A/A check ${verification.unmeasured ? "could not measure" : "passed"}`;
    // A check the host was too busy to run says nothing against the champion: it stays, and the check says so.
    await finish(verification.unmeasured ? "neutral" : "success", title, "");
    setChampionOutputs(sha, before.champion);
    core.info(title);
  } catch (e) {
    // Say what the host serves now rather than assume it: the failure may have come anywhere.
    const now = await host.status().then((s) => `the host's champion is ${short(s.champion)}`, () => "the host's champion could not be read");
    await gh.finishCheck(check, "failure", "perf-gate: promotion failed", `**Promotion of ${sha.slice(0, 7)} failed**; ${now}.\n\n\`\`\`\n${(e as Error).message}\n\`\`\`\n`)
      .catch((ghError: Error) => core.warning(`could not report the failure on GitHub: ${ghError.message}`));
    throw e;
  } finally {
    host.close();
  }
}

export async function runRollback(job: Job): Promise<void> {
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const host = connectHost(job);
  try {
    // The workloads to verify with come from the workflow's commit; the restored champion
    // runs with the service spec it ran with before.
    const config = await configAt(gh, job.configPath, job.runner.sha);
    const before = await host.status();
    core.info(await host.rollback(job.busyDeadline));
    const after = await host.status();
    const verification = await verify(host, config, job, "rollback", after.champion);
    const title = `champion is ${short(after.champion)} again (rolled back from ${short(before.champion)}); A/A check ${verification.unmeasured ? "could not measure" : verification.passed ? "passed" : "failed"}`;
    await core.summary.addRaw(`## perf-gate: ${title}\n\n${verification.text}`).write();
    setChampionOutputs(after.champion, after.previous);
    if (!verification.passed) core.setFailed(`perf-gate: ${title}: ${verification.findings.join("; ")}`);
    else core.info(title);
  } finally {
    host.close();
  }
}

/** The commit to promote: the sha input, else a push's new HEAD, else the workflow's commit. */
function promotedSha(job: Job): string {
  if (job.sha) return job.sha;
  if (job.runner.eventName === "push") return parsePushToDefaultBranch(readEvent(job.runner));
  if (!/^[0-9a-f]{40}$/.test(job.runner.sha)) throw new InputError("input sha: give the commit to promote (GITHUB_SHA is not a commit SHA either)");
  return job.runner.sha;
}

/**
 * The short A/A run after a swap: the first workload at its first rate, for the configured
 * number of pairs. A run that fails (the new champion unhealthy or crashing) fails the check.
 */
async function verify(host: HostClient, config: GateConfig, job: Job, verb: string, sha: string): Promise<{ passed: boolean; unmeasured?: boolean; findings: string[]; text: string }> {
  const first = planRuns(config, {}, 0)[0]!;
  const narrowed = configFor(config, first.workload, first.rate);
  const short: GateConfig = { ...narrowed, slices: { ...config.slices, pairs: config.promotion.verify_pairs } };
  const seed = seedOf(sha);
  try {
    const evidence = await measure(host, short, {
      kind: "aa",
      runIdPrefix: `${verb}-${sha.slice(0, 7)}-${job.attempt}`,
      seed,
      busyDeadline: job.busyDeadline,
      pool: false,
      progress: logProgress("A/A check: "),
    });
    const analysis = decide(evidence.results, short, { seed, floors: (await host.status()).floors });
    writeArtifacts(job.outputDir, { analysis, report: markdownReport(analysis, { runUrl: job.runUrl }), documents: evidence.documents });
    const { passed, findings, notes } = championCheck(analysis);
    const result = quartet(analysis.headline, analysis.percentile, armsOf(analysis));
    const listed = [...findings, ...notes.map((n) => `Note: ${n}`)];
    return { passed, findings, text: `A/A check, the champion on both ports: ${result}.${listed.length ? `\n\n${listed.map((f) => `- ${f}`).join("\n")}` : ""}` };
  } catch (e) {
    const message = (e as Error).message;
    if (e instanceof CouldNotMeasureError) {
      core.warning(`perf-gate: the A/A check of ${sha.slice(0, 7)} could not measure: ${message.split("\n")[0]}`);
      if (e.explained) writeUnmeasured(job.outputDir, e.explained);
      const what = e.explained?.markdown ?? `\`\`\`\n${message}\n\`\`\``;
      return { passed: true, unmeasured: true, findings: [], text: `The A/A check could not measure, so it neither passes nor fails the champion:\n\n${what}` };
    }
    return { passed: false, findings: [message], text: `The A/A check could not run:\n\n\`\`\`\n${message}\n\`\`\`` };
  }
}

function setChampionOutputs(champion: string, previous: string): void {
  core.setOutput("champion", champion);
  core.setOutput("previous-champion", previous);
}

function short(sha: string): string {
  return sha ? sha.slice(0, 7) : "none";
}
