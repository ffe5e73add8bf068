// A GitHub REST API fake on loopback: a real HTTP server that octokit talks to through its own
// fetch, as it would to GitHub. It keeps the state perf-gate touches (files per ref, check runs,
// labels, comments, reactions, collaborator roles, pull requests) and behaves as GitHub does where
// the gate depends on it:
// - every request and every response is checked against GitHub's published OpenAPI description
//   (github-contract.ts); a violation answers 422 like GitHub and is kept in `violations`, which
//   `assertContract()` turns into a failed test naming the operation and the field;
// - lists are paginated (30 by default, at most 100 a page) with GitHub's `Link` header;
// - label names are case-insensitive, and adding an unknown label to an issue creates it;
// - the collaborator-permission API answers `permission` with the legacy base role only
//   (maintain reads as write, triage as read) and the real role in `role_name`;
// - every token is someone: an app's installation token (check runs carry that `app`, comments
//   are its `slug[bot]`, GET /user refuses it) or a user's token (which cannot write checks);
//   only the app that created a check run may update it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { checkRequest, checkResponse, matchOperation } from "./github-contract";

export type Role = "admin" | "maintain" | "write" | "triage" | "read" | "none";

export interface App {
  id: number;
  slug: string;
  name: string;
}

/** Who a token is: a user, or an app's bot (login `slug[bot]`). */
export interface Actor {
  login: string;
  id: number;
  type: "User" | "Bot";
  app: App | null;
}

/** The app behind the GITHUB_TOKEN of every workflow run, and its bot user. */
export const GITHUB_ACTIONS: App = { id: 15368, slug: "github-actions", name: "GitHub Actions" };
export const botOf = (app: App, id: number): Actor => ({ login: `${app.slug}[bot]`, id, type: "Bot", app });
export const userNamed = (login: string, id = 1000 + login.length): Actor => ({ login, id, type: "User", app: null });
export const ACTIONS_BOT = botOf(GITHUB_ACTIONS, 41898282);
/** The token the harness gives the action: the workflow's GITHUB_TOKEN. */
export const DEFAULT_TOKEN = "ghs_test";

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  operation: string | null;
  actor: string | null;
}

export interface CheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  output: { title: string | null; summary: string | null };
  details_url: string | null;
  started_at: string;
  completed_at: string | null;
  app: App;
}

export interface PullRequest {
  headSha: string;
  baseSha: string;
  baseRef: string;
  state: "open" | "closed";
  /** The head repository's full name; another than the base's makes a fork. */
  headRepo: string;
  headPushedAt: string;
  /** The commit its merge made on the base branch (a merge, squash or rebase commit); unmerged when left out. */
  mergeCommitSha?: string;
}

export interface Comment {
  id: number;
  body: string;
  user: Actor;
  created_at: string;
  updated_at: string;
}

interface Label {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

interface Reaction {
  id: number;
  content: string;
  user: Actor;
  created_at: string;
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

const LEGACY: Record<Role, "admin" | "write" | "read" | "none"> = {
  admin: "admin",
  maintain: "write",
  write: "write",
  triage: "read",
  read: "read",
  none: "none",
};
const DOCS = "https://docs.github.com/rest";

type Example = { name: string; examples: Record<string, unknown>[] };
const example = (event: string, pick: (e: Record<string, unknown>) => boolean = () => true) =>
  structuredClone((examples as unknown as Example[]).find((e) => e.name === event)!.examples.find(pick)!);
const templates = {
  user: example("issue_comment").sender as Record<string, unknown>,
  app: (example("check_run").check_run as { app: Record<string, unknown> }).app,
  comment: example("issue_comment").comment as Record<string, unknown>,
  pull: example("pull_request", (e) => e.action === "opened").pull_request as Record<string, unknown>,
};

export class GitHubFake {
  readonly requests: RecordedRequest[] = [];
  /** Contract violations seen so far (requests and responses); see assertContract. */
  readonly violations: string[] = [];
  /** "path@ref" → file text. */
  readonly files = new Map<string, string>();
  readonly checkRuns: CheckRun[] = [];
  readonly comments = new Map<number, Comment[]>();
  readonly pulls = new Map<number, PullRequest>();
  /** "base...head" → the merge base GitHub's compare API answers for it. */
  readonly mergeBases = new Map<string, string>();
  /** token → who it is. */
  readonly tokens = new Map<string, Actor>([[DEFAULT_TOKEN, ACTIONS_BOT]]);
  private readonly roles = new Map<string, { role: Role; roleName: string }>();
  /** Repository labels by lower-cased name. */
  private readonly labels = new Map<string, Label>();
  /** issue → lower-cased names of its labels, in the order they were added. */
  private readonly issueLabels = new Map<number, string[]>();
  private readonly reactions = new Map<number, Reaction[]>();
  private held: { match: (operation: string) => boolean; release: Promise<void> } | null = null;
  private server: Server | null = null;
  private nextId = 1000;
  private origin = "";

  constructor(readonly repository = "Codertocat/Hello-World") {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this.origin;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /**
   * Operations GitHub refuses from now on, with the status and message it answers (a secondary
   * rate limit is 403 on any operation), until deleted.
   */
  readonly refusals = new Map<string, { status: number; message: string }>();

  /** Fails (throws) when anything sent or answered broke GitHub's contract, naming each. */
  assertContract(): void {
    const found = this.violations.splice(0);
    if (found.length > 0) throw new Error(`GitHub contract violations:\n- ${found.join("\n- ")}`);
  }

  /** A collaborator's role: a built-in one, or a custom role with its base role. */
  setRole(login: string, role: Role, customName?: string): void {
    this.roles.set(login, { role, roleName: customName ?? role });
  }

  /** Names of an issue's labels, as GitHub spells them, sorted. */
  labelsOn(issue: number): string[] {
    return (this.issueLabels.get(issue) ?? []).map((k) => this.labels.get(k)!.name).sort();
  }

  /** A label added to an issue by someone else (creating it, as GitHub does, if it is new). */
  addLabel(issue: number, name: string): void {
    const key = this.labelFor(name).name.toLowerCase();
    const list = this.issueLabels.get(issue) ?? [];
    if (!list.includes(key)) list.push(key);
    this.issueLabels.set(issue, list);
  }

  /** Sets an issue's labels outright, as a person editing them would. */
  setLabels(issue: number, names: string[]): void {
    this.issueLabels.set(issue, []);
    for (const name of names) this.addLabel(issue, name);
  }

  /** A comment by someone else (a user, another bot). */
  addComment(issue: number, body: string, user: Actor): Comment {
    const now = new Date().toISOString();
    const c: Comment = { id: this.nextId++, body, user, created_at: now, updated_at: now };
    this.comments.set(issue, [...(this.comments.get(issue) ?? []), c]);
    return c;
  }

  /** A check run created by some app (perhaps not the action's), as GitHub keeps it. */
  addCheckRun(run: Omit<CheckRun, "id" | "started_at" | "completed_at" | "details_url"> & Partial<CheckRun>): CheckRun {
    const now = new Date().toISOString();
    const full: CheckRun = {
      details_url: null,
      started_at: now,
      completed_at: run.status === "completed" ? now : null,
      ...run,
      id: this.nextId++,
    };
    this.checkRuns.push(full);
    return full;
  }

  reactionsOn(commentId: number): string[] {
    return (this.reactions.get(commentId) ?? []).map((r) => r.content);
  }

  /** Holds every request for the matching operations until the returned function is called. */
  hold(match: (operation: string) => boolean): () => void {
    let release!: () => void;
    this.held = { match, release: new Promise<void>((r) => (release = r)) };
    return () => {
      this.held = null;
      release();
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", this.origin);
    const method = req.method ?? "GET";
    const token = /^(?:token|bearer) (.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const actor = token ? (this.tokens.get(token) ?? null) : null;
    const m = matchOperation(method, url.pathname);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    this.requests.push({
      method,
      path: url.pathname + url.search,
      body,
      operation: m?.id ?? null,
      actor: actor?.login ?? null,
    });
    const send = ({ status, body: data, headers = {} }: Reply) => {
      if (m) this.violations.push(...checkResponse(m.id, status, data));
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(data === undefined ? "" : JSON.stringify(data));
    };
    if (!m) {
      this.violations.push(
        `${method} ${url.pathname}: not an operation in test/support/github-openapi.json (add it to scripts/openapi-fixture.mjs)`,
      );
      return send({ status: 404, body: { message: `the fake does not serve ${method} ${url.pathname}` } });
    }
    if (!actor) return send(error(401, "Bad credentials"));
    const problems = checkRequest(m, url.searchParams, body);
    if (problems.length > 0) {
      this.violations.push(...problems);
      return send(error(422, `Invalid request.\n\n${problems.join("\n")}`));
    }
    if (this.held?.match(m.id)) await this.held.release;
    const refusal = this.refusals.get(m.id);
    send(refusal ? error(refusal.status, refusal.message) : this.serve(m.id, m.params, url, body, actor));
  }

  // biome-ignore lint/suspicious/noExplicitAny: the body was validated against the operation's OpenAPI schema before it got here
  private serve(op: string, p: Record<string, string>, url: URL, body: any, actor: Actor): Reply {
    const q = url.searchParams;
    switch (op) {
      case "repos/get-content": {
        const file = this.files.get(`${p.path}@${q.get("ref")}`);
        return file === undefined ? error(404, "Not Found") : ok(200, this.contentFile(p.path!, q.get("ref")!, file));
      }
      case "repos/get-collaborator-permission-level": {
        const r = this.roles.get(p.username!);
        if (!r) return error(404, "Not Found");
        return ok(200, {
          permission: LEGACY[r.role],
          role_name: r.roleName,
          user: {
            ...this.user(userNamed(p.username!)),
            permissions: {
              admin: r.role === "admin",
              maintain: ["admin", "maintain"].includes(r.role),
              push: LEGACY[r.role] === "write" || r.role === "admin",
              triage: r.role !== "read" && r.role !== "none",
              pull: r.role !== "none",
            },
            role_name: r.roleName,
          },
        });
      }
      case "pulls/get": {
        const pr = this.pulls.get(Number(p.pull_number));
        return pr ? ok(200, this.pull(Number(p.pull_number), pr)) : error(404, "Not Found");
      }
      case "repos/list-pull-requests-associated-with-commit": {
        // GitHub lists the pull requests a commit is part of: its head's commits, and the commit its merge made.
        const listed = [...this.pulls].filter(
          ([, pr]) => pr.headSha === p.commit_sha || pr.mergeCommitSha === p.commit_sha,
        );
        return ok(
          200,
          listed.map(([n, pr]) => this.pull(n, pr)),
        );
      }
      case "repos/compare-commits-with-basehead": {
        const [base, head] = p.basehead!.split("...");
        const mergeBase = this.mergeBases.get(p.basehead!);
        if (!mergeBase) return error(404, "Not Found");
        const compare = `https://github.com/${this.repository}/compare/${p.basehead}`;
        return ok(200, {
          url: this.api(`/compare/${p.basehead}`),
          html_url: compare,
          permalink_url: compare,
          diff_url: `${compare}.diff`,
          patch_url: `${compare}.patch`,
          base_commit: this.commit(base!),
          merge_base_commit: this.commit(mergeBase),
          status: mergeBase === base ? "ahead" : "diverged",
          ahead_by: 1,
          behind_by: mergeBase === base ? 0 : 1,
          total_commits: 1,
          commits: [this.commit(head!)],
          files: [],
        });
      }
      case "checks/create": {
        if (!actor.app) return error(403, "You must authenticate via a GitHub App.");
        const now = new Date().toISOString();
        const completed = body.status === "completed" || body.conclusion !== undefined;
        const run = this.addCheckRun({
          name: body.name,
          head_sha: body.head_sha,
          status: completed ? "completed" : (body.status ?? "queued"),
          conclusion: body.conclusion ?? null,
          output: { title: body.output?.title ?? null, summary: body.output?.summary ?? null },
          details_url: body.details_url ?? null,
          started_at: body.started_at ?? now,
          completed_at: completed ? (body.completed_at ?? now) : null,
          app: actor.app,
        });
        return ok(201, this.checkRun(run));
      }
      case "checks/get":
      case "checks/update": {
        const run = this.checkRuns.find((r) => r.id === Number(p.check_run_id));
        if (!run) return error(404, "Not Found");
        if (op === "checks/get") return ok(200, this.checkRun(run));
        if (actor.app?.id !== run.app.id)
          return error(403, "Invalid app_id: a check run can only be modified by the GitHub App that created it.");
        if (body.conclusion !== undefined) {
          run.status = "completed";
          run.conclusion = body.conclusion;
          run.completed_at = body.completed_at ?? new Date().toISOString();
        } else if (body.status) run.status = body.status;
        if (body.output) run.output = { title: body.output.title ?? run.output.title, summary: body.output.summary };
        if (body.details_url) run.details_url = body.details_url;
        if (body.name) run.name = body.name;
        return ok(200, this.checkRun(run));
      }
      case "checks/list-for-ref": {
        let runs = this.checkRuns.filter((r) => r.head_sha === p.ref);
        if (q.get("check_name")) runs = runs.filter((r) => r.name === q.get("check_name"));
        if (q.get("status")) runs = runs.filter((r) => r.status === q.get("status"));
        if (q.get("app_id")) runs = runs.filter((r) => r.app.id === Number(q.get("app_id")));
        runs = [...runs].sort((a, b) => b.id - a.id);
        // The default filter, latest: each app's newest run of each name.
        if ((q.get("filter") ?? "latest") === "latest")
          runs = runs.filter((r, i) => runs.findIndex((o) => o.name === r.name && o.app.id === r.app.id) === i);
        const page = this.page(runs, url);
        return ok(200, { total_count: runs.length, check_runs: page.items.map((r) => this.checkRun(r)) }, page.headers);
      }
      case "reactions/create-for-issue-comment": {
        if (!this.findComment(Number(p.comment_id))) return error(404, "Not Found");
        const list = this.reactions.get(Number(p.comment_id)) ?? [];
        this.reactions.set(Number(p.comment_id), list);
        const mine = list.find((r) => r.content === body.content && r.user.login === actor.login);
        if (mine) return ok(200, this.reaction(mine));
        const r: Reaction = {
          id: this.nextId++,
          content: body.content,
          user: actor,
          created_at: new Date().toISOString(),
        };
        list.push(r);
        return ok(201, this.reaction(r));
      }
      case "issues/create-comment":
        return ok(201, this.comment(Number(p.issue_number), this.addComment(Number(p.issue_number), body.body, actor)));
      case "issues/list-comments": {
        const page = this.page(this.comments.get(Number(p.issue_number)) ?? [], url);
        return ok(
          200,
          page.items.map((c) => this.comment(Number(p.issue_number), c)),
          page.headers,
        );
      }
      case "issues/update-comment": {
        const found = this.findComment(Number(p.comment_id));
        if (!found) return error(404, "Not Found");
        found.comment.body = body.body;
        found.comment.updated_at = new Date().toISOString();
        return ok(200, this.comment(found.issue, found.comment));
      }
      case "issues/list-labels-on-issue": {
        const page = this.page(this.issueLabelObjects(Number(p.issue_number)), url);
        return ok(200, page.items, page.headers);
      }
      case "issues/add-labels": {
        const names: string[] = (Array.isArray(body) ? body : body.labels).map((l: string | { name: string }) =>
          typeof l === "string" ? l : l.name,
        );
        for (const name of names) this.addLabel(Number(p.issue_number), name);
        return ok(200, this.issueLabelObjects(Number(p.issue_number)));
      }
      case "issues/remove-label": {
        const list = this.issueLabels.get(Number(p.issue_number)) ?? [];
        const at = list.indexOf(p.name!.toLowerCase());
        if (at < 0) return error(404, "Label does not exist");
        list.splice(at, 1);
        return ok(200, this.issueLabelObjects(Number(p.issue_number)));
      }
      case "issues/get-label": {
        const label = this.labels.get(p.name!.toLowerCase());
        return label ? ok(200, this.label(label)) : error(404, "Not Found");
      }
      case "issues/create-label": {
        if (this.labels.has(String(body.name).toLowerCase())) {
          return {
            status: 422,
            body: {
              message: "Validation Failed",
              errors: [{ resource: "Label", code: "already_exists", field: "name" }],
              documentation_url: `${DOCS}/issues/labels#create-a-label`,
            },
          };
        }
        return ok(201, this.label(this.labelFor(body.name, body.color, body.description)));
      }
      case "users/get-authenticated":
        return actor.app
          ? error(403, "Resource not accessible by integration")
          : ok(200, {
              ...this.user(actor),
              name: null,
              company: null,
              blog: "",
              location: null,
              email: null,
              hireable: null,
              bio: null,
              public_repos: 0,
              public_gists: 0,
              followers: 0,
              following: 0,
              created_at: "2020-01-01T00:00:00Z",
              updated_at: "2020-01-01T00:00:00Z",
            });
      default:
        return error(404, `the fake does not serve ${op}`);
    }
  }

  /** A page of a list as GitHub serves it: per_page (default 30, at most 100), page, and a Link header. */
  private page<T>(all: readonly T[], url: URL): { items: T[]; headers: Record<string, string> } {
    const perPage = Math.min(100, Number(url.searchParams.get("per_page") ?? 30));
    const page = Number(url.searchParams.get("page") ?? 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const at = (n: number) => {
      const u = new URL(url);
      u.searchParams.set("page", String(n));
      return u.toString();
    };
    const links = [
      ...(page > 1 ? [`<${at(page - 1)}>; rel="prev"`] : []),
      ...(page < last ? [`<${at(page + 1)}>; rel="next"`, `<${at(last)}>; rel="last"`] : []),
      ...(page > 1 ? [`<${at(1)}>; rel="first"`] : []),
    ];
    return {
      items: all.slice((page - 1) * perPage, page * perPage),
      headers: links.length > 0 ? { link: links.join(", ") } : {},
    };
  }

  private labelFor(name: string, color = "ededed", description: string | null = null): Label {
    const key = name.toLowerCase();
    const existing = this.labels.get(key);
    if (existing) return existing;
    const label: Label = { id: this.nextId++, name, color, description };
    this.labels.set(key, label);
    return label;
  }

  private issueLabelObjects(issue: number) {
    return (this.issueLabels.get(issue) ?? []).map((k) => this.label(this.labels.get(k)!));
  }

  private findComment(id: number): { issue: number; comment: Comment } | null {
    for (const [issue, list] of this.comments) {
      const comment = list.find((c) => c.id === id);
      if (comment) return { issue, comment };
    }
    return null;
  }

  private api(path: string): string {
    return `${this.origin}/repos/${this.repository}${path}`;
  }

  private user(a: Actor) {
    const t = templates.user;
    const base = `${this.origin}/users/${encodeURIComponent(a.login)}`;
    return {
      ...t,
      login: a.login,
      id: a.id,
      node_id: `U_${a.id}`,
      type: a.type,
      avatar_url: `https://avatars.githubusercontent.com/u/${a.id}?v=4`,
      url: base,
      // A bot's page is its app's: https://github.com/apps/dependabot for dependabot[bot].
      html_url:
        a.type === "Bot"
          ? `https://github.com/apps/${a.app?.slug ?? a.login.replace(/\[bot\]$/, "")}`
          : `https://github.com/${a.login}`,
      followers_url: `${base}/followers`,
      following_url: `${base}/following{/other_user}`,
      gists_url: `${base}/gists{/gist_id}`,
      starred_url: `${base}/starred{/owner}{/repo}`,
      subscriptions_url: `${base}/subscriptions`,
      organizations_url: `${base}/orgs`,
      repos_url: `${base}/repos`,
      events_url: `${base}/events{/privacy}`,
      received_events_url: `${base}/received_events`,
    };
  }

  private app(app: App) {
    return {
      ...templates.app,
      id: app.id,
      slug: app.slug,
      name: app.name,
      node_id: `A_${app.id}`,
      html_url: `https://github.com/apps/${app.slug}`,
    };
  }

  private checkRun(r: CheckRun) {
    return {
      id: r.id,
      node_id: `CR_${r.id}`,
      head_sha: r.head_sha,
      external_id: "",
      name: r.name,
      url: this.api(`/check-runs/${r.id}`),
      html_url: `https://github.com/${this.repository}/runs/${r.id}`,
      details_url: r.details_url,
      status: r.status,
      conclusion: r.conclusion,
      started_at: r.started_at,
      completed_at: r.completed_at,
      output: {
        ...r.output,
        text: null,
        annotations_count: 0,
        annotations_url: this.api(`/check-runs/${r.id}/annotations`),
      },
      check_suite: { id: 1 },
      app: this.app(r.app),
      pull_requests: [],
    };
  }

  private comment(issue: number, c: Comment) {
    return {
      ...templates.comment,
      id: c.id,
      node_id: `IC_${c.id}`,
      body: c.body,
      user: this.user(c.user),
      url: this.api(`/issues/comments/${c.id}`),
      html_url: `https://github.com/${this.repository}/pull/${issue}#issuecomment-${c.id}`,
      issue_url: this.api(`/issues/${issue}`),
      created_at: c.created_at,
      updated_at: c.updated_at,
      author_association: c.user.app ? "NONE" : "CONTRIBUTOR",
      performed_via_github_app: c.user.app ? this.app(c.user.app) : null,
    };
  }

  private reaction(r: Reaction) {
    return { id: r.id, node_id: `REA_${r.id}`, user: this.user(r.user), content: r.content, created_at: r.created_at };
  }

  private label(l: Label) {
    return {
      id: l.id,
      node_id: `LA_${l.id}`,
      url: this.api(`/labels/${encodeURIComponent(l.name)}`),
      name: l.name,
      description: l.description,
      color: l.color,
      default: false,
    };
  }

  private contentFile(path: string, ref: string, text: string) {
    const url = `${this.api(`/contents/${path}`)}?ref=${ref}`;
    const html = `https://github.com/${this.repository}/blob/${ref}/${path}`;
    const git = this.api(`/git/blobs/${ref}`);
    return {
      type: "file",
      encoding: "base64",
      size: Buffer.byteLength(text),
      name: path.split("/").at(-1)!,
      path,
      content: Buffer.from(text).toString("base64"),
      sha: ref,
      url,
      git_url: git,
      html_url: html,
      download_url: `https://raw.githubusercontent.com/${this.repository}/${ref}/${path}`,
      _links: { self: url, git, html },
    };
  }

  /** A commit as the compare API lists it. */
  private commit(sha: string) {
    const url = this.api(`/commits/${sha}`);
    const person = {
      name: "Codertocat",
      email: "21031067+Codertocat@users.noreply.github.com",
      date: "2019-05-15T15:19:25Z",
    };
    return {
      url,
      sha,
      node_id: `C_${sha}`,
      html_url: `https://github.com/${this.repository}/commit/${sha}`,
      comments_url: `${url}/comments`,
      commit: {
        url: this.api(`/git/commits/${sha}`),
        author: person,
        committer: person,
        message: "a commit",
        comment_count: 0,
        tree: { sha, url: this.api(`/git/trees/${sha}`) },
      },
      author: null,
      committer: null,
      parents: [],
    };
  }

  /** The pull request as pulls/get serves it: a real pull request object, with this one's numbers. */
  private pull(number: number, pr: PullRequest) {
    // biome-ignore lint/suspicious/noExplicitAny: GitHub's own example object, only spread and overridden
    const t = structuredClone(templates.pull) as any;
    const fork = pr.headRepo !== this.repository;
    return {
      ...t,
      number,
      state: pr.state,
      url: this.api(`/pulls/${number}`),
      auto_merge: null,
      merged_at: pr.mergeCommitSha ? "2026-11-21T10:00:00Z" : null,
      merge_commit_sha: pr.mergeCommitSha ?? null,
      head: {
        ...t.head,
        sha: pr.headSha,
        repo: { ...t.head.repo, full_name: pr.headRepo, fork, pushed_at: pr.headPushedAt },
      },
      base: { ...t.base, sha: pr.baseSha, ref: pr.baseRef, repo: { ...t.base.repo, full_name: this.repository } },
    };
  }
}

function ok(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, body, headers };
}

function error(status: number, message: string): Reply {
  return { status, body: { message, documentation_url: DOCS, status: String(status) } };
}
