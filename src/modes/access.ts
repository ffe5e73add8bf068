// mode: access — the first job of perf-gate.yml, before anything is built. It decides whether
// the pull request's head may be built and measured, so a fork's code is built only once a user
// with write permission has approved that head (#15). For a fork that is not approved it puts the
// neutral "waiting for approval" check on the head and removes an approval label that approves
// nothing (a new push, a label from a user without write): done here, in a job that does not
// need the build, a failed build cannot leave a stale approval behind. It holds no host key and
// never checks code out.
import * as core from "@actions/core";
import { type Access, APPROVAL_LABEL, approves, decideAccess, decidesNothing } from "../access";
import { parsePullRequestEvent, type PullRequestEvent } from "../event";
import { GitHub } from "../github/client";
import type { Job } from "../job";
import { readEvent } from "../runner";

export const WAITING_TITLE = "perf-gate: waiting for approval";

export async function runAccess(job: Job): Promise<void> {
  core.setOutput("allowed", "false");
  const event = parsePullRequestEvent(job.runner.eventName, readEvent(job.runner));
  if (decidesNothing(event)) return core.info(`the ${event.label} label decides nothing about ${event.headSha.slice(0, 7)}: nothing to do`);
  const gh = new GitHub(job.githubToken, event.owner, event.repo, (l) => core.info(l));
  const access = await accessOf(gh, event);
  if (access.allowed) {
    core.info(`access: ${access.reason}`);
    core.setOutput("allowed", "true");
    return;
  }
  core.notice(access.reason);
  // The label approves the head it was added on, by a writer; on any other event it would lie.
  await gh.removeLabel(event.number, APPROVAL_LABEL);
  const check = await gh.startCheck(event.headSha, WAITING_TITLE, undefined, job.runUrl);
  await gh.finishCheck(check, "neutral", WAITING_TITLE, `**Not run.** ${access.reason}.`);
  core.setOutput("verdict", "skipped");
}

/** Whether this event's head may run on the host: the sender's permission decides an approval label. */
export async function accessOf(gh: GitHub, event: PullRequestEvent): Promise<Access> {
  return decideAccess(event, approves(event) ? await gh.permission(event.sender) : null);
}
