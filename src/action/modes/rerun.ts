// mode: rerun — measures the head SHA that mode command pinned for a /perf rerun, after the
// workflow built it. It checks the comment and its author again (this job holds the host key
// and takes no earlier job's word), refuses if the pull request has moved since, and pools the
// new runs with the earlier ones of the same commit.
import * as core from "@actions/core";
import { parseCommentEvent } from "../event";
import { GitHub } from "../github/client";
import { InputError } from "../inputs";
import type { Job } from "../job";
import { readEvent } from "../runner";
import { acceptCommand, refuseCommand } from "./command";
import { gatePullRequest } from "./gate";

export async function runRerun(job: Job): Promise<void> {
  if (!job.sha)
    throw new InputError(
      "input sha: mode rerun measures the head SHA that mode command pinned (its sha output); it is empty",
    );
  const event = parseCommentEvent(job.runner.eventName, readEvent(job.runner));
  const gh = new GitHub(job.githubToken, event.owner, event.repo, (l) => core.info(l));
  const accepted = await acceptCommand(gh, event);
  if (!accepted) return core.setOutput("verdict", "skipped");
  if (accepted.command.kind !== "rerun")
    throw new InputError(`mode rerun runs for a /perf rerun comment, not /perf ${accepted.command.kind}`);
  const { pr } = accepted;
  const pinned = job.sha;
  const who = event.author.login;
  if (pr.headSha !== pinned) {
    const reason = `the pull request moved since \`/perf rerun\`: it pinned ${pinned.slice(0, 7)}, and the head is now ${pr.headSha.slice(0, 7)}. ${pinned.slice(0, 7)} was not rerun; the push runs its own gate, or comment \`/perf rerun\` again.`;
    await refuseCommand(gh, event, reason);
    return core.setOutput("verdict", "skipped");
  }
  await gatePullRequest(gh, { number: pr.number, headSha: pinned, baseSha: pr.baseSha, baseRef: pr.baseRef }, job, {
    authorize: async () => ({
      allowed: true,
      reason: `/perf rerun by @${who}, who has write permission${pr.isFork ? `; it approves ${pinned.slice(0, 7)} of this fork` : ""}`,
    }),
    notes: [`Rerun requested by @${who}.`],
  });
}
