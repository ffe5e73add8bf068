// What an event is about, from its webhook payload: the pull request (pull_request,
// pull_request_target), the PR comment (issue_comment) or the pushed commit (push).
import { z } from "zod";
import { InputError } from "./inputs";

const repo = z.looseObject({ full_name: z.string(), fork: z.boolean().optional() });

const payloadSchema = z.looseObject({
  action: z.string(),
  number: z.number().int().optional(),
  pull_request: z.looseObject({
    number: z.number().int(),
    head: z.looseObject({ sha: z.string().regex(/^[0-9a-f]{40}$/), repo: repo.nullable() }),
    base: z.looseObject({ sha: z.string().regex(/^[0-9a-f]{40}$/), ref: z.string(), repo }),
  }),
  label: z.looseObject({ name: z.string() }).optional(),
  sender: z.looseObject({ login: z.string(), type: z.string().optional() }),
});

export interface PullRequestEvent {
  owner: string;
  repo: string;
  number: number;
  action: string;
  headSha: string;
  baseSha: string;
  baseRef: string;
  /** The head branch lives in another repository (a fork, or a deleted one). */
  isFork: boolean;
  label: string | null;
  sender: string;
}

export const PR_EVENTS = ["pull_request", "pull_request_target"];

export function parsePullRequestEvent(eventName: string, payload: unknown): PullRequestEvent {
  if (!PR_EVENTS.includes(eventName)) {
    throw new InputError(`mode gate runs on ${PR_EVENTS.join(" or ")} events, not ${eventName}`);
  }
  const p = parsePayload(payloadSchema, eventName, payload, "a pull request event");
  const pr = p.pull_request;
  const [owner, name] = pr.base.repo.full_name.split("/") as [string, string];
  return {
    owner,
    repo: name,
    number: pr.number,
    action: p.action,
    headSha: pr.head.sha,
    baseSha: pr.base.sha,
    baseRef: pr.base.ref,
    isFork: pr.head.repo === null || pr.head.repo.full_name !== pr.base.repo.full_name,
    label: p.label?.name ?? null,
    sender: p.sender.login,
  };
}

function parsePayload<T>(schema: z.ZodType<T>, eventName: string, payload: unknown, what: string): T {
  const parsed = schema.safeParse(payload);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new InputError(`the ${eventName} payload is not ${what}: ${i.path.join(".")}: ${i.message}`);
  }
  return parsed.data;
}

const commentSchema = z.looseObject({
  action: z.string(),
  issue: z.looseObject({ number: z.number().int(), pull_request: z.looseObject({}).nullish() }),
  comment: z.looseObject({
    id: z.number().int(),
    body: z.string().nullable(),
    created_at: z.string(),
    user: z.looseObject({ login: z.string(), type: z.string() }),
  }),
  repository: z.looseObject({ full_name: z.string() }),
});

export interface CommentEvent {
  owner: string;
  repo: string;
  action: string;
  /** The issue or pull request number. */
  number: number;
  onPullRequest: boolean;
  commentId: number;
  body: string;
  createdAt: Date;
  author: { login: string; isBot: boolean };
}

export function parseCommentEvent(eventName: string, payload: unknown): CommentEvent {
  if (eventName !== "issue_comment")
    throw new InputError(`/perf commands come as issue_comment events, not ${eventName}`);
  const p = parsePayload(commentSchema, eventName, payload, "a comment event");
  const [owner, repo] = p.repository.full_name.split("/") as [string, string];
  const { login, type } = p.comment.user;
  return {
    owner,
    repo,
    action: p.action,
    number: p.issue.number,
    onPullRequest: p.issue.pull_request != null,
    commentId: p.comment.id,
    body: p.comment.body ?? "",
    createdAt: new Date(p.comment.created_at),
    author: { login, isBot: type === "Bot" || login.endsWith("[bot]") },
  };
}

const pushSchema = z.looseObject({
  ref: z.string(),
  after: z.string().regex(/^[0-9a-f]{40}$/),
  deleted: z.boolean().optional(),
  repository: z.looseObject({ default_branch: z.string() }),
});

/** The commit a push to the default branch made HEAD; other pushes are refused. */
export function parsePushToDefaultBranch(payload: unknown): string {
  const p = parsePayload(pushSchema, "push", payload, "a push event");
  const want = `refs/heads/${p.repository.default_branch}`;
  if (p.ref !== want || p.deleted) {
    throw new InputError(
      `promotion follows pushes to the default branch (${want}); this push is to ${p.ref}${p.deleted ? " and deletes it" : ""}`,
    );
  }
  return p.after;
}
