// mode: command — a /perf comment on a pull request. It never touches the benchmark host: it
// checks who asked (through the permission API), answers on the PR, and for /perf rerun pins
// the head SHA for the jobs that build and measure it (mode rerun). /perf override is done here.
import * as core from "@actions/core";
import { type CommentEvent, parseCommentEvent } from "../event";
import { GitHub, type PullRequestState } from "../github/client";
import type { Job } from "../job";
import { readEvent } from "../runner";
import { authorizeCommand, parseSlashCommand, quoted } from "../slash-command";
import { mergeBaseToBuild } from "./merge-base";

export async function runCommand(job: Job): Promise<void> {
  core.setOutput("command", "");
  const event = parseCommentEvent(job.runner.eventName, readEvent(job.runner));
  const gh = new GitHub(job.githubToken, event.owner, event.repo, (l) => core.info(l));
  const accepted = await acceptCommand(gh, event);
  if (!accepted) return;
  const { command, pr } = accepted;
  if (command.kind === "rerun") {
    core.setOutput("command", "rerun");
    core.setOutput("sha", pr.headSha);
    core.setOutput("merge-base-sha", await mergeBaseToBuild(gh, job, pr));
    core.info(`/perf rerun by @${event.author.login}: pinned head ${pr.headSha}`);
    return;
  }
  await override(gh, event, pr, command.reason);
}

type Accepted = { command: { kind: "rerun" } | { kind: "override"; reason: string }; pr: PullRequestState };

/**
 * Parses and authorizes a /perf comment, replying when it refuses. An accepted command gets
 * the eyes reaction and the pull request as it is now, with its head pinned.
 */
export async function acceptCommand(gh: GitHub, event: CommentEvent): Promise<Accepted | null> {
  const ignore = (why: string) => {
    core.info(`nothing to do: ${why}`);
    return null;
  };
  if (event.action !== "created") return ignore(`the comment was ${event.action}; only new comments are commands`);
  if (!event.onPullRequest) return ignore(`#${event.number} is an issue, not a pull request`);
  const command = parseSlashCommand(event.body);
  if (command.kind === "none") return ignore("the comment's first line is not a /perf command");
  const refuse = async (reason: string) => {
    await refuseCommand(gh, event, reason);
    return null;
  };
  if (command.kind === "invalid") return refuse(command.message);
  const permission = event.author.isBot ? null : await gh.permission(event.author.login);
  const access = authorizeCommand(command.kind, event.author, permission);
  if (!access.allowed) return refuse(`\`/perf ${command.kind}\` refused: ${access.reason}.`);
  await gh.react(event.commentId, "eyes");
  const pr = await gh.pullRequest(event.number);
  if (!pr.open) return refuse(`this pull request is closed; \`/perf ${command.kind}\` does nothing.`);
  // A fork's head is approved by the writer who asked; if the fork was pushed to after the
  // comment, the head may be code they never saw.
  if (command.kind === "rerun" && pr.isFork && pr.headPushedAt && pr.headPushedAt > event.createdAt) {
    return refuse(
      `the fork was pushed to after your comment, so the head you meant to approve is not certain. Comment \`/perf rerun\` again to measure ${pr.headSha.slice(0, 7)}.`,
    );
  }
  return { command, pr };
}

/** Answers the comment's author with why nothing was done. */
export async function refuseCommand(gh: GitHub, event: CommentEvent, reason: string): Promise<void> {
  core.notice(`refused: ${reason}`);
  await gh.comment(event.number, `@${event.author.login} ${reason}`);
}

/**
 * Turns the perf-gate check that blocks the current head (a failure, or a head waiting for
 * approval that a maintainer lets merge unmeasured) to success, saying who and why.
 */
async function override(gh: GitHub, event: CommentEvent, pr: PullRequestState, reason: string): Promise<void> {
  const who = event.author.login;
  const check = await gh.latestCheck(pr.headSha);
  if (check?.conclusion !== "failure" && check?.conclusion !== "action_required") {
    const state = check ? `its latest perf-gate check is ${check.conclusion}` : "it has no finished perf-gate check";
    return refuseCommand(gh, event, `nothing to override on ${pr.headSha.slice(0, 7)}: ${state}.`);
  }
  const stamp = `**Overridden** by @${who} on ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC: ${quoted(reason)}`;
  // The title is plain text; the summary, the sticky comment and the reply are Markdown.
  await gh.finishCheck(
    check.id,
    "success",
    `overridden by @${who}: ${reason}`,
    `${stamp}\n\n${check.conclusion === "failure" ? "The verdict stands as measured" : "The head is not measured"}; the merge is allowed.\n\n---\n\n${check.summary}`,
  );
  await gh.prependToStickyComment(pr.number, `> ${stamp}`);
  await gh.comment(
    event.number,
    `@${who} the perf-gate check on ${pr.headSha.slice(0, 7)} (${quoted(check.title)}) is overridden: ${quoted(reason)}`,
  );
  core.setOutput("command", "override");
  core.info(`override by @${who} on ${pr.headSha}: ${reason}`);
}
