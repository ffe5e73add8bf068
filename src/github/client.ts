// GitHub through octokit, with retries and rate-limit throttling. Thin: each method is one
// piece of output (check run, labels, sticky comment) or one question (permission, config).
import { getOctokit } from "@actions/github";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import type { Permission } from "../access";

export const VERDICT_LABELS = { green: "perf:green", red: "perf:red", grey: "perf:grey" } as const;
const LABEL_COLORS: Record<string, string> = { "perf:green": "1a7f37", "perf:red": "cf222e", "perf:grey": "8c959f", "perf:approved": "0969da" };
export const STICKY_MARKER = "<!-- perf-gate:sticky -->";
export const CHECK_NAME = "perf-gate";
export const SUMMARY_LIMIT = 65_535;

export type Conclusion = "success" | "failure" | "neutral";

/** A pull request's current state, as the API says it now (not as an event said it). */
export interface PullRequestState {
  number: number;
  open: boolean;
  headSha: string;
  baseSha: string;
  baseRef: string;
  isFork: boolean;
  /** The head repository's last push (any branch), null when unknown. */
  headPushedAt: Date | null;
}

export interface CheckRunState {
  id: number;
  headSha: string;
  conclusion: string | null;
  title: string;
  summary: string;
}

export type Reaction = "eyes" | "confused" | "+1" | "-1" | "rocket";

export class GitHub {
  private readonly octokit;

  constructor(
    token: string,
    private readonly owner: string,
    private readonly repo: string,
    log: (line: string) => void = () => {},
  ) {
    this.octokit = getOctokit(
      token,
      {
        retry: { doNotRetry: [400, 401, 403, 404, 422] },
        throttle: {
          onRateLimit: (after: number, opts: { method: string; url: string }, _o: unknown, count: number) => {
            log(`GitHub rate limit on ${opts.method} ${opts.url}; retrying in ${after}s`);
            return count < 2;
          },
          onSecondaryRateLimit: (after: number, opts: { method: string; url: string }) => {
            log(`GitHub secondary rate limit on ${opts.method} ${opts.url} (retry after ${after}s); not retrying`);
          },
        },
      },
      retry,
      throttling,
    );
  }

  private get r() {
    return { owner: this.owner, repo: this.repo };
  }

  /** A file's text at a commit, or null when it does not exist there. */
  async fileAt(path: string, ref: string): Promise<string | null> {
    try {
      const res = await this.octokit.rest.repos.getContent({ ...this.r, path, ref });
      const data = res.data as { type?: string; content?: string; encoding?: string };
      if (data.type !== "file" || data.content === undefined) return null;
      return Buffer.from(data.content, (data.encoding as BufferEncoding) ?? "base64").toString("utf8");
    } catch (e) {
      if ((e as { status?: number }).status === 404) return null;
      throw e;
    }
  }

  async permission(username: string): Promise<Permission> {
    try {
      const res = await this.octokit.rest.repos.getCollaboratorPermissionLevel({ ...this.r, username });
      return (res.data.permission as Permission) ?? "none";
    } catch (e) {
      if ((e as { status?: number }).status === 404) return "none";
      throw e;
    }
  }

  async pullRequest(number: number): Promise<PullRequestState> {
    const { data: pr } = await this.octokit.rest.pulls.get({ ...this.r, pull_number: number });
    const pushed = pr.head.repo?.pushed_at;
    return {
      number,
      open: pr.state === "open",
      headSha: pr.head.sha,
      baseSha: pr.base.sha,
      baseRef: pr.base.ref,
      isFork: pr.head.repo === null || pr.head.repo.full_name !== pr.base.repo.full_name,
      headPushedAt: pushed ? new Date(pushed) : null,
    };
  }

  async startCheck(headSha: string, title: string, name = CHECK_NAME): Promise<number> {
    const res = await this.octokit.rest.checks.create({
      ...this.r, name, head_sha: headSha, status: "in_progress", output: { title, summary: title },
    });
    return res.data.id;
  }

  /** The newest completed perf-gate check on a commit, or null. */
  async latestCheck(sha: string): Promise<CheckRunState | null> {
    const res = await this.octokit.rest.checks.listForRef({ ...this.r, ref: sha, check_name: CHECK_NAME, filter: "latest", per_page: 100 });
    const done = res.data.check_runs.filter((c) => c.status === "completed").sort((a, b) => b.id - a.id)[0];
    if (!done) return null;
    return { id: done.id, headSha: done.head_sha, conclusion: done.conclusion, title: done.output.title ?? "", summary: done.output.summary ?? "" };
  }

  async react(commentId: number, content: Reaction): Promise<void> {
    await this.octokit.rest.reactions.createForIssueComment({ ...this.r, comment_id: commentId, content });
  }

  /** A new comment (a reply to a command), as opposed to the one sticky verdict comment. */
  async comment(issue: number, body: string): Promise<void> {
    await this.octokit.rest.issues.createComment({ ...this.r, issue_number: issue, body: body.slice(0, SUMMARY_LIMIT) });
  }

  async finishCheck(id: number, conclusion: Conclusion, title: string, summary: string): Promise<void> {
    await this.octokit.rest.checks.update({
      ...this.r, check_run_id: id, status: "completed", conclusion,
      output: { title: title.slice(0, 255), summary: summary.slice(0, SUMMARY_LIMIT) },
    });
  }

  /** Puts exactly one verdict label on the PR (creating it if missing); null removes them all. */
  async setVerdictLabel(issue: number, label: string | null): Promise<void> {
    const current = await this.octokit.paginate(this.octokit.rest.issues.listLabelsOnIssue, { ...this.r, issue_number: issue, per_page: 100 });
    const names = new Set(current.map((l) => l.name));
    for (const other of Object.values(VERDICT_LABELS)) {
      if (other !== label && names.has(other)) await this.removeLabel(issue, other);
    }
    if (label && !names.has(label)) {
      await this.ensureLabel(label);
      await this.octokit.rest.issues.addLabels({ ...this.r, issue_number: issue, labels: [label] });
    }
  }

  async removeLabel(issue: number, name: string): Promise<void> {
    try {
      await this.octokit.rest.issues.removeLabel({ ...this.r, issue_number: issue, name });
    } catch (e) {
      if ((e as { status?: number }).status !== 404) throw e;
    }
  }

  private async ensureLabel(name: string): Promise<void> {
    try {
      await this.octokit.rest.issues.getLabel({ ...this.r, name });
    } catch (e) {
      if ((e as { status?: number }).status !== 404) throw e;
      await this.octokit.rest.issues.createLabel({ ...this.r, name, color: LABEL_COLORS[name] ?? "ededed", description: "set by perf-gate" });
    }
  }

  /**
   * Creates or updates the one comment that carries the marker. Only a bot's comment counts,
   * so a user who pastes the marker cannot capture the gate's comment.
   */
  async upsertStickyComment(issue: number, body: string): Promise<"created" | "updated"> {
    const text = `${STICKY_MARKER}\n${body}`.slice(0, SUMMARY_LIMIT);
    const mine = await this.stickyComment(issue);
    if (mine) {
      await this.octokit.rest.issues.updateComment({ ...this.r, comment_id: mine.id, body: text });
      return "updated";
    }
    await this.octokit.rest.issues.createComment({ ...this.r, issue_number: issue, body: text });
    return "created";
  }

  /** Puts lines above the sticky comment's body, if there is one. */
  async prependToStickyComment(issue: number, lines: string): Promise<void> {
    const mine = await this.stickyComment(issue);
    if (mine) await this.octokit.rest.issues.updateComment({ ...this.r, comment_id: mine.id, body: `${STICKY_MARKER}\n${lines}\n\n${mine.body}`.slice(0, SUMMARY_LIMIT) });
  }

  /** The sticky comment's id and body (without the marker line), or null. */
  private async stickyComment(issue: number): Promise<{ id: number; body: string } | null> {
    const comments = await this.octokit.paginate(this.octokit.rest.issues.listComments, { ...this.r, issue_number: issue, per_page: 100 });
    const mine = comments.find((c) => c.user?.type === "Bot" && c.body?.includes(STICKY_MARKER));
    return mine ? { id: mine.id, body: (mine.body ?? "").replace(`${STICKY_MARKER}\n`, "") } : null;
  }
}
