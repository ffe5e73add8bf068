// One job's settings, resolved once in main from the action's inputs and the runner's
// environment, then passed down: no mode reads the raw inputs, and the deadline for waiting out
// a busy host is one absolute time for the whole job, however many calls wait on it.
import { join } from "node:path";
import * as core from "@actions/core";
import type { PlannedRun } from "../config/gate-config";
import { hostOutDir } from "../experiment/artifacts";
import { type Connect, connectHostClient, type SshTarget } from "../host/client";
import { HostPool } from "../host/pool";
import type { HostAddress } from "../host/targets";
import { InputError, type Inputs, type Mode, needsHost } from "./inputs";
import { type RunnerEnv, runUrl } from "./runner";

export interface Job {
  mode: Mode;
  githubToken: string;
  /** The gate config's path in the repository. */
  configPath: string;
  /** The build to deploy (gate, rerun, promote); checked when a mode deploys it. */
  artifact: string;
  /** comparison_base merge-base: the merge base's build and the SHA it was built from (gate, rerun). */
  baseArtifact: string;
  baseSha: string;
  /** rerun: the head SHA mode command pinned; promote: a commit to promote by hand. */
  sha: string;
  onInfrastructureFailure: "fail" | "neutral";
  /** When to stop waiting out a host busy with another run (ms since the epoch). */
  busyDeadline: number;
  /** Where the report, chart and results go. */
  outputDir: string;
  /** The benchmark hosts: one, or a pool (none in modes access and command, which never touch one). */
  hosts: HostAddress[];
  /** How every host is logged in to; null in modes access and command. */
  login: Omit<SshTarget, "host" | "port"> | null;
  runner: RunnerEnv;
  /** The workflow run's page: the check runs' details_url and the reports' links. */
  runUrl: string;
  /** Unique per workflow run attempt: `${runId}-${runAttempt}`. */
  attempt: string;
  /** How each host is reached: over SSH (the action), or in memory (the modes' tests). */
  connect: Connect;
}

export function resolveJob(inputs: Inputs, runner: RunnerEnv, now = Date.now(), connect = connectHostClient): Job {
  const attempt = `${runner.runId}-${runner.runAttempt}`;
  return {
    mode: inputs.mode,
    githubToken: inputs["github-token"],
    configPath: inputs.config,
    artifact: inputs.artifact,
    baseArtifact: inputs["base-artifact"],
    baseSha: inputs["base-sha"],
    sha: inputs.sha,
    onInfrastructureFailure: inputs["on-infrastructure-failure"],
    busyDeadline: now + inputs["busy-timeout-minutes"] * 60_000,
    outputDir: inputs["output-dir"] || join(runner.runnerTemp, "perf-gate", attempt),
    hosts: inputs.hosts,
    login: !needsHost(inputs.mode)
      ? null
      : { user: inputs.user, privateKey: inputs["ssh-key"], knownHosts: inputs["known-hosts"] },
    runner,
    runUrl: runUrl(runner),
    attempt,
    connect,
  };
}

/** The job's hosts: one, or a pool, each its own instrument (docs/design/0026-a-pool-of-hosts.md). */
export function connectPool(job: Job): HostPool {
  if (!job.login || job.hosts.length === 0)
    throw new InputError(`mode ${job.mode} does not talk to the benchmark host`);
  return HostPool.overSsh(job.hosts, job.login, { log: (l) => core.info(l), connect: job.connect });
}

/** The build a mode deploys; checked when it is about to be used. */
export function requireArtifact(job: Job, exists: (path: string) => boolean): string {
  if (!job.artifact)
    throw new InputError(
      `input artifact: mode ${job.mode} deploys a build; give the built release (a directory, a .tar.gz or a container image: docker save's .tar, an OCI archive or layout)`,
    );
  if (!exists(job.artifact))
    throw new InputError(`input artifact: ${job.artifact} does not exist (build the commit first)`);
  return job.artifact;
}

/** Progress of a job's runs in the Actions log: one collapsible group per run. */
export function logProgress(label: string) {
  return {
    note: (line: string) => core.info(line),
    line: (line: string) => core.info(line),
    runStart: (run: PlannedRun, runId: string) =>
      core.startGroup(`${label}${run.workload} @ ${run.rate} req/s (run ${runId})`),
    runEnd: () => core.endGroup(),
  };
}

/** Where one host's files go: the output dir itself for one host, a folder per host in a pool. */
export function outputDirFor(job: Job, host: string): string {
  return hostOutDir(job.outputDir, host, job.hosts.length);
}

/** A line about one host's work; in a pool, whose hosts work side by side, it starts with the host. */
export function sayFor(job: Job, host: string): (line: string) => void {
  return job.hosts.length > 1 ? (line) => core.info(`${host}: ${line}`) : (line) => core.info(line);
}

/** Progress of one host's runs: a group per run for one host, lines that name the host in a pool. */
export function hostProgress(job: Job, host: string, label: string) {
  if (job.hosts.length <= 1) return logProgress(label);
  const say = sayFor(job, host);
  return {
    note: say,
    line: say,
    runStart: (run: PlannedRun, runId: string) => say(`${label}${run.workload} @ ${run.rate} req/s (run ${runId})`),
  };
}
