// mode: access — the first job of perf-gate.yml, before anything is built. It decides whether
// the pull request's head may be built and measured, so a fork's code is built only once a user
// with write permission has approved that head, and only while it is still the head
// (docs/design/0014-who-runs-code.md). For a
// fork that is not approved it puts a neutral check on the head the event carries ("waiting for
// approval", or "approved …, head is now …: approve again") and removes an approval label that
// approves nothing (a new push, a label from a user without write, a push after the label):
// done here, in a job that does not need the build, a failed build cannot leave a stale approval
// behind. It holds no host key and never checks code out.
import * as core from "@actions/core";
import { type Access, APPROVAL_LABEL, approves, decideAccess, decidesNothing, type Refusal } from "../approval";
import { type PullRequestEvent, parsePullRequestEvent } from "../event";
import { GitHub } from "../github/client";
import type { Job } from "../job";
import { readEvent } from "../runner";
import { mergeBaseToBuild } from "./merge-base";

export async function runAccess(job: Job): Promise<void> {
  core.setOutput("allowed", "false");
  const event = parsePullRequestEvent(job.runner.eventName, readEvent(job.runner));
  if (decidesNothing(event))
    return core.info(`the ${event.label} label decides nothing about ${event.headSha.slice(0, 7)}: nothing to do`);
  const gh = new GitHub(job.githubToken, event.owner, event.repo, (l) => core.info(l));
  const access = await accessOf(gh, event);
  if (access.allowed) {
    core.info(`access: ${access.reason}`);
    core.setOutput("allowed", "true");
    core.setOutput("merge-base-sha", await mergeBaseToBuild(gh, job, event));
    return;
  }
  await refuseAccess(gh, event.number, await gh.startCheck(event.headSha, access.title, undefined, job.runUrl), access);
}

/**
 * Says on the head's check why it is not measured (neutral: not a verdict), and removes the
 * approval label: the label approves a head it was added on, by a writer, and here it would lie.
 */
export async function refuseAccess(gh: GitHub, pr: number, check: number, access: Refusal): Promise<void> {
  core.notice(access.reason);
  await gh.removeLabel(pr, APPROVAL_LABEL);
  await gh.finishCheck(check, "neutral", access.title, `**Not run.** ${access.reason}.`);
  core.setOutput("verdict", "skipped");
}

/**
 * Whether this event's head may run on the host. An approval label is decided by its sender's
 * permission and by the pull request's head now, both asked of GitHub when the job runs.
 */
export async function accessOf(gh: GitHub, event: PullRequestEvent): Promise<Access> {
  if (!approves(event)) return decideAccess(event, null);
  const [permission, now] = await Promise.all([gh.permission(event.sender), gh.pullRequest(event.number)]);
  return decideAccess(event, { permission, headNow: now.headSha });
}
