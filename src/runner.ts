// The Actions runner's side of a mode: its environment, the event payload, the output
// directory and the benchmark host named by the inputs. A thin adapter.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { HostClient } from "./host/client";
import { InputError, type Inputs } from "./inputs";

export interface RunnerEnv {
  eventName: string;
  eventPath: string;
  /** owner/name of the repository the workflow runs in. */
  repository: string;
  /** The workflow's commit (for push and schedule, the branch's new HEAD). */
  sha: string;
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
    repository: need("GITHUB_REPOSITORY"),
    sha: need("GITHUB_SHA"),
    runId: env.GITHUB_RUN_ID ?? "0",
    runAttempt: env.GITHUB_RUN_ATTEMPT ?? "1",
    runnerTemp: env.RUNNER_TEMP ?? "/tmp",
  };
}

export function readEvent(env: RunnerEnv): unknown {
  return JSON.parse(readFileSync(env.eventPath, "utf8"));
}

export function ownerAndRepo(env: RunnerEnv): [string, string] {
  const [owner, repo] = env.repository.split("/");
  if (!owner || !repo) throw new InputError(`environment GITHUB_REPOSITORY: expected owner/name, got ${env.repository}`);
  return [owner, repo];
}

/** Where this job's reports go: the output-dir input, or one directory per run attempt. */
export function outputDir(inputs: Inputs, env: RunnerEnv): string {
  const dir = inputs["output-dir"] || join(env.runnerTemp, "perf-gate", `${env.runId}-${env.runAttempt}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function connectHost(inputs: Inputs): HostClient {
  return new HostClient({
    host: inputs.host, port: inputs.port, user: inputs.user,
    privateKey: inputs["ssh-key"], knownHosts: inputs["known-hosts"], log: (l) => core.info(l),
  });
}

/** The deadline for waiting out a host busy with another run. */
export function busyDeadline(inputs: Inputs): number {
  return Date.now() + inputs["busy-timeout-minutes"] * 60_000;
}
