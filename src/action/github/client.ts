// GitHub through octokit, with retries and rate-limit throttling. Thin: each method is one
// piece of output (check run, labels, sticky comment) or one question (permission, config).
import { getOctokit } from "@actions/github";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { effectivePermission, type Permission, sameLabel } from "../approval";
import { CANCELLED_TITLE, checkFinished, checkFinishing, checkOpened, checkOpening } from "./open-checks";

export const VERDICT_LABELS = { green: "perf:green", red: "perf:red", grey: "perf:grey" } as const;
const LABEL_COLORS: Record<string, string> = {
  "perf:green": "1a7f37",
  "perf:red": "cf222e",
  "perf:grey": "8c959f",
  "perf:approved": "0969da",
};
/**
 * The first line of the sticky comment. The comment is found only among this token's own
 * comments and only with the marker as its first line; the action's replies start with the
 * author's @login and never carry `<!--`, so no user text echoed in them can pass for it.
 */
export const STICKY_MARKER = "<!-- perf-gate:sticky -->";
export const CHECK_NAME = "perf-gate";
export const SUMMARY_LIMIT = 65_535;

/**
 * A check run's conclusion as perf-gate writes it. A required check passes on success and
 * neutral (and skipped), and blocks on the others: action_required is a head nobody has
 * approved for the host, which must not pass as a verdict would.
 */
export type Conclusion = "success" | "failure" | "neutral" | "cancelled" | "action_required";

/**
 * Who this token is. perf-gate writes check runs, which only a GitHub App can, so its token is
 * an app's installation token (the workflow's GITHUB_TOKEN is the github-actions app's): its
 * comments are by the app's bot user `slug[bot]`. GET /user refuses installation tokens and
 * GET /app wants the app's private key, so the app is learnt from what GitHub answers to the
 * action's own writes: the `app` of the check run it creates, or the `user` of its reaction or
 * comment. Before any write, GET /user names a user's token.
 */
export interface TokenIdentity {
  login: string;
  /** The app's slug, null for a user's token. */
  appSlug: string | null;
}

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
  status: string;
  conclusion: string | null;
  title: string;
  summary: string;
}

export type Reaction = "eyes" | "confused" | "+1" | "-1" | "rocket";

/**
 * Octokit spaces writes as GitHub asks of an integration: 1 s apart, 3 s between comments.
 * perf-gate's tests set PERF_GATE_GITHUB_UNPACED=1 against their GitHub fake on loopback, where
 * the spacing only waits (half the time of a test of the modes). Rate limits GitHub answers
 * with are honoured either way.
 */
const noSpacing = { key: () => ({ schedule: <T>(_options: unknown, job: () => Promise<T>) => job() }) };
// Octokit's options type wants Bottleneck groups here; the plugin calls key().schedule() alone.
const unpaced = { write: noSpacing, notifications: noSpacing } as unknown as Record<string, never>;

export class GitHub {
  private readonly octokit;
  private me: TokenIdentity | null = null;

  constructor(
    token: string,
    private readonly owner: string,
    private readonly repo: string,
    log: (line: string) => void = () => {},
  ) {
    this.octokit = getOctokit(
      token,
      {
        // As @actions/github reads it, but when the client is made rather than when that module
        // loads: a process may make clients for more than one API (the modes' in-process tests).
        baseUrl: process.env.GITHUB_API_URL || "https://api.github.com",
        retry: { doNotRetry: [400, 401, 403, 404, 422] },
        throttle: {
          ...(process.env.PERF_GATE_GITHUB_UNPACED === "1" ? unpaced : {}),
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

  /** The user's role on the repository (maintain and triage too, which `permission` folds into write and read). */
  async permission(username: string): Promise<Permission> {
    try {
      const res = await this.octokit.rest.repos.getCollaboratorPermissionLevel({ ...this.r, username });
      return effectivePermission(res.data.permission, res.data.role_name);
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

  /**
   * The pull request whose merge made `sha` on the base branch (a merge, squash or rebase
   * commit), as GitHub associates commits with pull requests; null for a commit no merged pull
   * request made (a direct push).
   */
  async mergedPullRequest(sha: string): Promise<number | null> {
    const { data } = await this.octokit.rest.repos.listPullRequestsAssociatedWithCommit({
      ...this.r,
      commit_sha: sha,
      per_page: 100,
    });
    const merged = data.filter((pr) => pr.merged_at !== null);
    return (merged.find((pr) => pr.merge_commit_sha === sha) ?? merged[0])?.number ?? null;
  }

  /**
   * The merge base of a pull request: the commit where its head left the base branch (GitHub's
   * compare API, which also reaches a fork's commits through the base repository).
   */
  async mergeBase(baseSha: string, headSha: string): Promise<string> {
    const { data } = await this.octokit.rest.repos.compareCommitsWithBasehead({
      ...this.r,
      basehead: `${baseSha}...${headSha}`,
      per_page: 1,
    });
    return data.merge_base_commit.sha;
  }

  /** Opens a check run; until finishCheck, a cancelled step completes it as cancelled (open-checks.ts). */
  async startCheck(headSha: string, title: string, name = CHECK_NAME, detailsUrl?: string): Promise<number> {
    const res = await checkOpening(
      this.octokit.rest.checks.create({
        ...this.r,
        name,
        head_sha: headSha,
        status: "in_progress",
        output: { title, summary: title },
        ...(detailsUrl ? { details_url: detailsUrl } : {}),
      }),
    );
    if (res.data.app?.slug) this.learn(`${res.data.app.slug}[bot]`);
    const id = res.data.id;
    checkOpened(id, (summary) => this.finishCheck(id, "cancelled", CANCELLED_TITLE, summary));
    return id;
  }

  async check(id: number): Promise<CheckRunState> {
    const { data } = await this.octokit.rest.checks.get({ ...this.r, check_run_id: id });
    return checkState(data);
  }

  /**
   * The newest completed perf-gate check on a commit that this token's app wrote (of those
   * `accept` takes), or null. Another app's check of the same name is not ours to read or
   * override (nor could it be updated).
   */
  async latestCheck(sha: string, accept: (c: CheckRunState) => boolean = () => true): Promise<CheckRunState | null> {
    const me = await this.identity();
    if (!me.appSlug)
      throw new Error(
        `the github-token is @${me.login}'s, a user's: check runs are written and updated only by a GitHub App (the default github.token is one)`,
      );
    const runs = await this.octokit.paginate(this.octokit.rest.checks.listForRef, {
      ...this.r,
      ref: sha,
      check_name: CHECK_NAME,
      filter: "all",
      per_page: 100,
    });
    return (
      runs
        .filter((c) => c.status === "completed" && c.app?.slug === me.appSlug)
        .sort((a, b) => b.id - a.id)
        .map(checkState)
        .find(accept) ?? null
    );
  }

  async react(commentId: number, content: Reaction): Promise<void> {
    const { data } = await this.octokit.rest.reactions.createForIssueComment({
      ...this.r,
      comment_id: commentId,
      content,
    });
    if (data.user) this.learn(data.user.login);
  }

  /** A new comment (a reply to a command), as opposed to the one sticky verdict comment. */
  async comment(issue: number, body: string): Promise<void> {
    const { data } = await this.octokit.rest.issues.createComment({
      ...this.r,
      issue_number: issue,
      body: body.slice(0, SUMMARY_LIMIT),
    });
    if (data.user) this.learn(data.user.login);
  }

  async finishCheck(id: number, conclusion: Conclusion, title: string, summary: string): Promise<void> {
    checkFinishing(id);
    let done = false;
    try {
      await this.octokit.rest.checks.update({
        ...this.r,
        check_run_id: id,
        status: "completed",
        conclusion,
        output: { title: title.slice(0, 255), summary: summary.slice(0, SUMMARY_LIMIT) },
      });
      done = true;
    } finally {
      // A failed update leaves the check open: a signal or the post step may still complete it.
      checkFinished(id, done);
    }
  }

  /** Completes a check as cancelled unless it is already complete; says whether it did. */
  async cancelCheckIfOpen(id: number, summary: string): Promise<boolean> {
    if ((await this.check(id)).status === "completed") return false;
    await this.finishCheck(id, "cancelled", CANCELLED_TITLE, summary);
    return true;
  }

  /** Puts exactly one verdict label on the PR (creating it if missing); null removes them all. Names compare case-insensitively, as GitHub's do. */
  async setVerdictLabel(issue: number, label: string | null): Promise<void> {
    const current = await this.octokit.paginate(this.octokit.rest.issues.listLabelsOnIssue, {
      ...this.r,
      issue_number: issue,
      per_page: 100,
    });
    const has = (name: string) => current.some((l) => sameLabel(l.name, name));
    for (const other of Object.values(VERDICT_LABELS)) {
      if (!(label && sameLabel(other, label)) && has(other)) await this.removeLabel(issue, other);
    }
    if (label && !has(label)) {
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

  /** Creates a verdict label with its colour; addLabels would create it too, but grey and undescribed. */
  private async ensureLabel(name: string): Promise<void> {
    try {
      await this.octokit.rest.issues.getLabel({ ...this.r, name });
    } catch (e) {
      if ((e as { status?: number }).status !== 404) throw e;
      try {
        await this.octokit.rest.issues.createLabel({
          ...this.r,
          name,
          color: LABEL_COLORS[name] ?? "ededed",
          description: "set by perf-gate",
        });
      } catch (created) {
        // Another run created it in between (GitHub answers 422 already_exists).
        if ((created as { status?: number }).status !== 422) throw created;
      }
    }
  }

  /**
   * Creates or updates the one comment this token wrote with the marker as its first line;
   * with create false, only updates one that is there.
   */
  async upsertStickyComment(issue: number, body: string, create = true): Promise<"created" | "updated" | "none"> {
    const text = `${STICKY_MARKER}\n${body}`.slice(0, SUMMARY_LIMIT);
    const mine = await this.stickyComment(issue);
    if (mine) {
      await this.octokit.rest.issues.updateComment({ ...this.r, comment_id: mine.id, body: text });
      return "updated";
    }
    if (!create) return "none";
    await this.octokit.rest.issues.createComment({ ...this.r, issue_number: issue, body: text });
    return "created";
  }

  /** Puts lines above the sticky comment's body, if there is one. */
  async prependToStickyComment(issue: number, lines: string): Promise<void> {
    const mine = await this.stickyComment(issue);
    if (mine)
      await this.octokit.rest.issues.updateComment({
        ...this.r,
        comment_id: mine.id,
        body: `${STICKY_MARKER}\n${lines}\n\n${mine.body}`.slice(0, SUMMARY_LIMIT),
      });
  }

  /** Who this token is (see TokenIdentity). */
  async identity(): Promise<TokenIdentity> {
    if (this.me) return this.me;
    try {
      const { data } = await this.octokit.rest.users.getAuthenticated();
      this.learn(data.login);
      return this.me!;
    } catch (e) {
      const status = (e as { status?: number }).status;
      if (status !== 401 && status !== 403) throw e;
      throw new Error(
        `cannot tell which app the github-token belongs to before it has written anything (GET /user answered ${status}); this is a bug in perf-gate`,
      );
    }
  }

  private learn(login: string): void {
    this.me ??= { login, appSlug: login.endsWith("[bot]") ? login.slice(0, -"[bot]".length) : null };
  }

  /** The sticky comment's id and body (without the marker line), or null. */
  private async stickyComment(issue: number): Promise<{ id: number; body: string } | null> {
    const me = await this.identity();
    const comments = await this.octokit.paginate(this.octokit.rest.issues.listComments, {
      ...this.r,
      issue_number: issue,
      per_page: 100,
    });
    const mine = comments.find((c) => c.user?.login === me.login && (c.body ?? "").startsWith(`${STICKY_MARKER}\n`));
    return mine ? { id: mine.id, body: mine.body!.slice(STICKY_MARKER.length + 1) } : null;
  }
}

function checkState(c: {
  id: number;
  head_sha: string;
  status: string;
  conclusion: string | null;
  output: { title: string | null; summary: string | null };
}): CheckRunState {
  return {
    id: c.id,
    headSha: c.head_sha,
    status: c.status,
    conclusion: c.conclusion,
    title: c.output.title ?? "",
    summary: c.output.summary ?? "",
  };
}
