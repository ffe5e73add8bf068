// One job's settings, resolved once in main from the action's inputs and the runner's
// environment, then passed down: no mode reads the raw inputs, and the deadline for waiting out
// a busy host is one absolute time for the whole job, however many calls wait on it.
import { join } from "node:path";
import * as core from "@actions/core";
import type { PlannedRun } from "../config/gate-config";
import { type BenchmarkHost, HostClient, type SshTarget } from "../host/client";
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
  /** The benchmark host; null in modes access and command, which never touch it. */
  host: SshTarget | null;
  runner: RunnerEnv;
  /** The workflow run's page: the check runs' details_url and the reports' links. */
  runUrl: string;
  /** Unique per workflow run attempt: `${runId}-${runAttempt}`. */
  attempt: string;
  /** How the modes reach the host: over SSH (the action), or in memory (the modes' tests). */
  connect: Connect;
}

/** Opens the benchmark host at a target. */
export type Connect = (target: SshTarget, log: (line: string) => void) => BenchmarkHost;

export const overSsh: Connect = (target, log) => new HostClient({ ...target, log });

export function resolveJob(inputs: Inputs, runner: RunnerEnv, now = Date.now(), connect = overSsh): Job {
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
    host: !needsHost(inputs.mode) ? null : {
      host: inputs.host, port: inputs.port, user: inputs.user, privateKey: inputs["ssh-key"], knownHosts: inputs["known-hosts"],
    },
    runner,
    runUrl: runUrl(runner),
    attempt,
    connect,
  };
}

export function connectHost(job: Job): BenchmarkHost {
  if (!job.host) throw new InputError(`mode ${job.mode} does not talk to the benchmark host`);
  return job.connect(job.host, (l) => core.info(l));
}

/** The build a mode deploys; checked when it is about to be used. */
export function requireArtifact(job: Job, exists: (path: string) => boolean): string {
  if (!job.artifact) throw new InputError(`input artifact: mode ${job.mode} deploys a build; give the built release (a directory, a .tar.gz or a container image: docker save's .tar, an OCI archive or layout)`);
  if (!exists(job.artifact)) throw new InputError(`input artifact: ${job.artifact} does not exist (build the commit first)`);
  return job.artifact;
}

/** Progress of a job's runs in the Actions log: one collapsible group per run. */
export function logProgress(label: string) {
  return {
    note: (line: string) => core.info(line),
    line: (line: string) => core.info(line),
    runStart: (run: PlannedRun, runId: string) => core.startGroup(`${label}${run.workload} @ ${run.rate} req/s (run ${runId})`),
    runEnd: () => core.endGroup(),
  };
}
