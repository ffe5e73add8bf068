// comparison_base: merge-base (docs/design/0014-who-runs-code.md). The jobs that decide what is
// built (access, command) name the merge base for the workflow's build-base job; the job that
// measures (gate, rerun) asks GitHub for it again, takes no earlier job's word, and runs the build
// of exactly that commit in the champion's arm, unless the merge base is the champion itself.
import * as core from "@actions/core";
import { ConfigError, type GateConfig } from "../../config/gate-config";
import type { BenchmarkHost } from "../../host/client";
import type { GitHub } from "../github/client";
import { InputError } from "../inputs";
import type { Job } from "../job";
import { configAt } from "../repo-config";

export interface PullRequestCommits {
  headSha: string;
  baseSha: string;
  baseRef: string;
}

/**
 * The merge base the build-base job builds when the base branch's config compares with it,
 * else "". A config that cannot be read builds nothing here: the gate reads it again and
 * reports the error.
 */
export async function mergeBaseToBuild(gh: GitHub, job: Job, pr: PullRequestCommits): Promise<string> {
  let config: GateConfig;
  try {
    config = await configAt(gh, job.configPath, pr.baseSha, ` on the base branch ${pr.baseRef}`);
  } catch (e) {
    core.warning(`the config could not be read, so no merge base is built: ${(e as Error).message}`);
    return "";
  }
  if (config.comparison_base !== "merge-base") return "";
  const sha = await gh.mergeBase(pr.baseSha, pr.headSha);
  core.info(`comparison_base merge-base: the merge base of ${pr.headSha.slice(0, 7)} is ${sha.slice(0, 7)}`);
  return sha;
}

export interface MergeBaseBuild {
  /** The build the champion arm runs instead of the champion; absent: the champion runs. */
  build?: { sha: string; artifact: string };
  /** A line for the report. */
  note?: string;
}

/** The merge base the gate compares with (asked of GitHub again), or undefined when the config compares with the champion. */
export async function comparedMergeBase(
  gh: GitHub,
  config: GateConfig,
  pr: PullRequestCommits,
): Promise<string | undefined> {
  return config.comparison_base === "merge-base" ? gh.mergeBase(pr.baseSha, pr.headSha) : undefined;
}

/** What the champion arm runs on this host for a gate of this pull request: the merge base's build, unless it is the host's champion. */
export async function mergeBaseBuild(
  host: BenchmarkHost,
  sha: string | undefined,
  pr: PullRequestCommits,
  job: Job,
  exists: (path: string) => boolean,
): Promise<MergeBaseBuild> {
  if (!sha) return {};
  const short = sha.slice(0, 7);
  const { champion } = await host.status();
  if (sha === champion) return { note: `Compared with the merge base \`${short}\`, which is the host's champion.` };
  const why = `comparison_base is merge-base and the merge base ${short} of ${pr.headSha.slice(0, 7)} is not the host's champion ${champion.slice(0, 7)}, so the gate measures a build of it`;
  if (!job.baseArtifact)
    throw new ConfigError(
      `input base-artifact: ${why}; give its build as base-artifact and its SHA as base-sha (perf-gate.yml's build-base job makes it from the access job's merge-base-sha)`,
    );
  if (job.baseSha !== sha)
    throw new ConfigError(
      `input base-sha: ${why}, but base-artifact is a build of ${job.baseSha || "(base-sha not given)"}`,
    );
  if (!exists(job.baseArtifact))
    throw new InputError(
      `input base-artifact: ${job.baseArtifact} does not exist (build the merge base ${short} first)`,
    );
  return { build: { sha, artifact: job.baseArtifact } };
}
