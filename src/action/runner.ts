// The Actions runner's side of a job: its environment and the event payload. A thin adapter.
import { readFileSync } from "node:fs";
import { InputError } from "./inputs";

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
  /** The GitHub the run is on: https://github.com, or a GitHub Enterprise Server's URL. */
  serverUrl: string;
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
    serverUrl: env.GITHUB_SERVER_URL || "https://github.com",
  };
}

/** The workflow run's page; its artifacts are at #artifacts. */
export function runUrl(env: RunnerEnv): string {
  return `${env.serverUrl}/${env.repository}/actions/runs/${env.runId}`;
}

export function readEvent(env: RunnerEnv): unknown {
  return JSON.parse(readFileSync(env.eventPath, "utf8"));
}

export function ownerAndRepo(env: RunnerEnv): [string, string] {
  const [owner, repo] = env.repository.split("/");
  if (!owner || !repo)
    throw new InputError(`environment GITHUB_REPOSITORY: expected owner/name, got ${env.repository}`);
  return [owner, repo];
}
