// mode: gate — the automatic check on a pull request: decide whether the PR's code may run on
// the host, deploy it as the challenger, run every workload and rate, analyse, and report.
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { APPROVAL_LABEL, decideAccess } from "./access";
import { ConfigError, parseConfig, type GateConfig } from "./config";
import { type Experiments, judge, runExperiments, seedOf } from "./experiment";
import { parsePullRequestEvent, type PullRequestEvent } from "./event";
import { GitHub } from "./github/client";
import { HostClient, HostError } from "./host/client";
import { InputError, type Inputs } from "./inputs";
import { gateOutcome } from "./report/gate-outcome";

export interface RunnerEnv {
  eventName: string;
  eventPath: string;
  runId: string;
  runAttempt: string;
  runnerTemp: string;
}

export function runnerEnv(env: NodeJS.ProcessEnv = process.env): RunnerEnv {
  const need = (k: string) => {
    const v = env[k];
    if (!v) throw new InputError(`environment ${k} is not set: perf-gate runs inside a GitHub Actions job`);
    return v;
  };
  return {
    eventName: need("GITHUB_EVENT_NAME"),
    eventPath: need("GITHUB_EVENT_PATH"),
    runId: env.GITHUB_RUN_ID ?? "0",
    runAttempt: env.GITHUB_RUN_ATTEMPT ?? "1",
    runnerTemp: env.RUNNER_TEMP ?? "/tmp",
  };
}

export async function runGate(inputs: Inputs, env: RunnerEnv): Promise<void> {
  const event = parsePullRequestEvent(env.eventName, JSON.parse(readFileSync(env.eventPath, "utf8")));
  const gh = new GitHub(inputs["github-token"], event.owner, event.repo, (l) => core.info(l));
  if (event.isFork && event.action === "synchronize") {
    // A new push voids the approval of the previous head.
    await gh.removeLabel(event.number, APPROVAL_LABEL);
  }
  const check = await gh.startCheck(event.headSha, "perf-gate: measuring");
  const outDir = inputs["output-dir"] || join(env.runnerTemp, "perf-gate", `${env.runId}-${env.runAttempt}`);
  mkdirSync(outDir, { recursive: true });
  let host: HostClient | null = null;
  try {
    const permission = event.isFork && event.label === APPROVAL_LABEL ? await gh.permission(event.sender) : null;
    const access = decideAccess(event, permission);
    if (!access.allowed) {
      core.notice(access.reason);
      await gh.finishCheck(check, "neutral", "perf-gate: waiting for approval", `**Not run.** ${access.reason}.`);
      core.setOutput("verdict", "skipped");
      return;
    }
    core.info(`access: ${access.reason}`);
    const config = await baseConfig(gh, inputs.config, event);
    if (!statSync(inputs.artifact, { throwIfNoEntry: false })) {
      throw new InputError(`input artifact: ${inputs.artifact} does not exist (build the pull request first)`);
    }
    host = new HostClient({
      host: inputs.host, port: inputs.port, user: inputs.user,
      privateKey: inputs["ssh-key"], knownHosts: inputs["known-hosts"], log: (l) => core.info(l),
    });
    const experiments = await measure(host, config, event, env, inputs);
    const status = await host.status();
    const { analysis, report, reportPath, resultPath } = judge(experiments, config, status, seedOf(event.headSha), outDir, (a) =>
      a.verdict === "green" ? [`🏆 **Candidate champion**: ${event.headSha.slice(0, 7)} is faster than the champion ${status.champion.slice(0, 7)}.`] : []);
    const outcome = gateOutcome(analysis);

    await gh.finishCheck(check, outcome.conclusion, outcome.title, report);
    await gh.setVerdictLabel(event.number, outcome.label);
    core.info(`sticky comment ${await gh.upsertStickyComment(event.number, report)}`);
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
    await reportFailure(gh, check, event, inputs, e as Error);
  } finally {
    host?.close();
  }
}

/** The config from the base branch's commit: a pull request cannot loosen its own gate. */
async function baseConfig(gh: GitHub, path: string, event: PullRequestEvent): Promise<GateConfig> {
  const text = await gh.fileAt(path, event.baseSha);
  if (text === null) {
    throw new ConfigError(`${path}: not found on the base branch ${event.baseRef} at ${event.baseSha.slice(0, 7)}; the gate reads its config from the base branch so that a pull request cannot change its own gate`);
  }
  return parseConfig(text, path);
}

async function measure(host: HostClient, config: GateConfig, event: PullRequestEvent, env: RunnerEnv, inputs: Inputs): Promise<Experiments> {
  const sha = event.headSha;
  core.info(await host.deploy("challenger", sha, inputs.artifact));
  return runExperiments(host, config, {
    kind: "run",
    challengerSha: sha,
    runIdPrefix: `pr${event.number}-${sha.slice(0, 7)}-${env.runId}-${env.runAttempt}`,
    seed: seedOf(sha),
    busyDeadline: Date.now() + inputs["busy-timeout-minutes"] * 60_000,
    onLine: (line) => core.info(line),
    onRunStart: (workload, rate, runId) => core.startGroup(`${workload} @ ${rate} req/s (run ${runId})`),
    onRunEnd: () => core.endGroup(),
  });
}

/** Infrastructure and configuration failures: said as such, never as a performance verdict. */
async function reportFailure(gh: GitHub, check: number, event: PullRequestEvent, inputs: Inputs, e: Error): Promise<void> {
  const config = e instanceof ConfigError || e instanceof InputError;
  const kind = e instanceof HostError ? e.kind : config ? "configuration" : "internal";
  const title = config ? "perf-gate: configuration error" : `perf-gate could not measure (${kind.replace(/_/g, " ")})`;
  const body = `**${title}.** This is ${config ? "a configuration problem" : "an infrastructure failure"}, not a performance verdict.\n\n\`\`\`\n${e.message}\n\`\`\`\n`;
  const fail = config || inputs["on-infrastructure-failure"] === "fail";
  try {
    await gh.finishCheck(check, fail ? "failure" : "neutral", title, body);
    // The labels described an earlier head; they would lie about this one.
    await gh.setVerdictLabel(event.number, null);
    await gh.upsertStickyComment(event.number, `## perf-gate: ⚠️ not measured\n\n${body}`);
  } catch (ghError) {
    core.warning(`could not report the failure on GitHub: ${(ghError as Error).message}`);
  }
  core.setOutput("verdict", "error");
  if (fail) core.setFailed(`${title}: ${e.message}`);
  else core.warning(`${title}: ${e.message}`);
}


