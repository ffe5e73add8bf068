// mode: access — the first job of perf-gate.yml, before anything is built. It decides whether
// the pull request's head may be built and measured, so a fork's code is built only once a user
// with write permission has approved that head, and only while it is still the head
// (docs/design/0014-who-runs-code.md). For a fork that is not approved it puts a check on the
// head the event carries that blocks as a required check ("waiting for approval", or "approved
// …, head is now …: approve again"), unless that commit already has the gate's word (a reopen:
// its verdict is repeated, not covered), and removes an approval label that approves nothing
// (a new push, a label from a user without write, a push after the label): done here, in a job
// that does not need the build, a failed build cannot leave a stale approval behind. It holds no
// host key and never checks code out.
import * as core from "@actions/core";
import {
  type Access,
  APPROVAL_LABEL,
  approves,
  decideAccess,
  decidesNothing,
  type Refusal,
  standsOnCommit,
} from "../approval";
import { type PullRequestEvent, parsePullRequestEvent } from "../event";
import { type CheckRunState, type Conclusion, GitHub } from "../github/client";
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
  const check = await gh.startCheck(event.headSha, access.title, undefined, job.runUrl);
  // Asked after the check is opened: the token's app is known from it, and the new check is not finished.
  // A cancelled gate (a newer push's, or the post step's) is no word on the commit: the one before it is.
  const standing = await gh.latestCheck(event.headSha, standsOnCommit);
  if (standing) return repeatStanding(gh, event.number, check, standing, access);
  await refuseAccess(gh, event.number, { sha: event.headSha, check }, access);
}

/**
 * Says on the head's check why it is not measured, as a conclusion that blocks a required check
 * (action_required: not a verdict, and nothing to merge on), and removes the approval label: the
 * label approves a head it was added on, by a writer, and here it would lie. If the commit is
 * the pull request's head, the verdict labels and the sticky comment described an earlier head:
 * the labels are removed and the comment says this head is not measured.
 */
export async function refuseAccess(
  gh: GitHub,
  pr: number,
  refused: { sha: string; check: number },
  access: Refusal,
): Promise<void> {
  core.notice(access.reason);
  await gh.removeLabel(pr, APPROVAL_LABEL);
  const said = `**Not run.** ${access.reason}.`;
  await gh.finishCheck(refused.check, "action_required", access.title, said);
  core.setOutput("verdict", "skipped");
  // The check holds the refusal: nothing after it may turn into a failure report over it (one
  // that on-infrastructure-failure: neutral would make passing).
  try {
    if ((await gh.pullRequest(pr)).headSha === refused.sha) {
      await gh.setVerdictLabel(pr, null);
      await gh.upsertStickyComment(
        pr,
        `## perf-gate: ⏸️ ${refused.sha.slice(0, 7)} not measured\n\n${said} The last verdict here was of an earlier head; its check run keeps its report.`,
        false,
      );
    }
  } catch (e) {
    core.warning(
      `the refusal is on the check run, but the labels or the sticky comment could not be updated: ${(e as Error).message}`,
    );
  }
}

/** The commit's own verdict (or override, or failure report), repeated on the newer check an event made. */
async function repeatStanding(
  gh: GitHub,
  pr: number,
  check: number,
  standing: CheckRunState,
  access: Refusal,
): Promise<void> {
  core.info(
    `${standing.headSha.slice(0, 7)} already has the gate's word (${standing.conclusion}: ${standing.title}); this event approves nothing new, so it stands`,
  );
  await gh.removeLabel(pr, APPROVAL_LABEL);
  await gh.finishCheck(
    check,
    standing.conclusion as Conclusion,
    standing.title,
    `Repeated from this commit's earlier perf-gate check: this event measured nothing (${access.reason}).\n\n---\n\n${standing.summary}`,
  );
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
