// The pull request an event is about, from the webhook payload (pull_request or
// pull_request_target).
import { z } from "zod";

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
    throw new Error(`mode gate runs on ${PR_EVENTS.join(" or ")} events, not ${eventName}`);
  }
  const parsed = payloadSchema.safeParse(payload);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new Error(`the ${eventName} payload is not a pull request event: ${i.path.join(".")}: ${i.message}`);
  }
  const p = parsed.data;
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
