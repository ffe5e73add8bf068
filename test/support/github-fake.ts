// A GitHub REST API fake on loopback: a real HTTP server that records every request and
// keeps the state the gate touches (files per ref, check runs, labels, comments,
// collaborator permissions). octokit talks to it through its own fetch, as it would to GitHub.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
}

export interface CheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion?: string;
  output?: { title: string; summary: string };
}

export interface PullRequest {
  headSha: string;
  baseSha: string;
  baseRef: string;
  state: "open" | "closed";
  /** The head repository's full name; another than the base's makes a fork. */
  headRepo: string;
  headPushedAt: string;
}

export interface Comment {
  id: number;
  body: string;
  user: { login: string; type: string };
}

export class GitHubFake {
  readonly requests: RecordedRequest[] = [];
  /** "path@ref" → file text. */
  readonly files = new Map<string, string>();
  readonly checkRuns: CheckRun[] = [];
  readonly repoLabels = new Set<string>();
  readonly issueLabels = new Map<number, Set<string>>();
  readonly comments = new Map<number, Comment[]>();
  readonly permissions = new Map<string, string>();
  readonly pulls = new Map<number, PullRequest>();
  /** comment id → reactions given to it. */
  readonly reactions = new Map<number, string[]>();
  private server: Server | null = null;
  private nextId = 1000;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  labelsOn(issue: number): string[] {
    return [...(this.issueLabels.get(issue) ?? [])].sort();
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body = text ? JSON.parse(text) : undefined;
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    this.requests.push({ method, path: url.pathname + url.search, body });
    const reply = (status: number, data?: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(data === undefined ? "" : JSON.stringify(data));
    };
    const route = (pattern: RegExp) => url.pathname.match(pattern);
    let m: RegExpMatchArray | null;

    if (method === "GET" && (m = route(/^\/repos\/[^/]+\/[^/]+\/contents\/(.+)$/))) {
      const file = this.files.get(`${decodeURIComponent(m[1]!)}@${url.searchParams.get("ref")}`);
      if (file === undefined) return reply(404, { message: "Not Found" });
      return reply(200, { type: "file", encoding: "base64", content: Buffer.from(file).toString("base64") });
    }
    if (method === "GET" && (m = route(/^\/repos\/[^/]+\/[^/]+\/collaborators\/([^/]+)\/permission$/))) {
      const permission = this.permissions.get(m[1]!);
      if (!permission) return reply(404, { message: "Not Found" });
      return reply(200, { permission, user: { login: m[1] } });
    }
    if (method === "GET" && (m = route(/^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/))) {
      const pr = this.pulls.get(Number(m[3]));
      if (!pr) return reply(404, { message: "Not Found" });
      const base = `${m[1]}/${m[2]}`;
      return reply(200, {
        number: Number(m[3]), state: pr.state,
        head: { sha: pr.headSha, repo: { full_name: pr.headRepo, fork: pr.headRepo !== base, pushed_at: pr.headPushedAt } },
        base: { sha: pr.baseSha, ref: pr.baseRef, repo: { full_name: base } },
      });
    }
    if (method === "POST" && (m = route(/^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)\/reactions$/))) {
      const list = this.reactions.get(Number(m[1])) ?? [];
      this.reactions.set(Number(m[1]), list);
      const content = (body as { content: string }).content;
      if (list.includes(content)) return reply(200, { content });
      list.push(content);
      return reply(201, { content });
    }
    if (method === "GET" && (m = route(/^\/repos\/[^/]+\/[^/]+\/commits\/([0-9a-f]{40})\/check-runs$/))) {
      const name = url.searchParams.get("check_name");
      const runs = this.checkRuns.filter((r) => r.head_sha === m![1] && (!name || r.name === name));
      return reply(200, { total_count: runs.length, check_runs: runs.map((r) => ({ ...r, output: r.output ?? { title: null, summary: null } })) });
    }
    if (method === "POST" && route(/^\/repos\/[^/]+\/[^/]+\/check-runs$/)) {
      const run: CheckRun = { id: this.nextId++, ...(body as Omit<CheckRun, "id">) };
      this.checkRuns.push(run);
      return reply(201, run);
    }
    if (method === "PATCH" && (m = route(/^\/repos\/[^/]+\/[^/]+\/check-runs\/(\d+)$/))) {
      const run = this.checkRuns.find((r) => r.id === Number(m![1]));
      if (!run) return reply(404, { message: "Not Found" });
      Object.assign(run, body);
      return reply(200, run);
    }
    if (method === "GET" && (m = route(/^\/repos\/[^/]+\/[^/]+\/labels\/(.+)$/))) {
      const name = decodeURIComponent(m[1]!);
      return this.repoLabels.has(name) ? reply(200, { name }) : reply(404, { message: "Not Found" });
    }
    if (method === "POST" && route(/^\/repos\/[^/]+\/[^/]+\/labels$/)) {
      this.repoLabels.add((body as { name: string }).name);
      return reply(201, body);
    }
    if ((m = route(/^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/labels(?:\/(.+))?$/))) {
      const issue = Number(m[1]);
      const set = this.issueLabels.get(issue) ?? new Set<string>();
      this.issueLabels.set(issue, set);
      if (method === "GET") return reply(200, [...set].map((name) => ({ name })));
      if (method === "POST") {
        for (const l of (body as { labels: string[] }).labels) {
          if (!this.repoLabels.has(l)) return reply(422, { message: `label ${l} does not exist` });
          set.add(l);
        }
        return reply(200, [...set].map((name) => ({ name })));
      }
      if (method === "DELETE" && m[2]) {
        const name = decodeURIComponent(m[2]);
        if (!set.delete(name)) return reply(404, { message: "Label does not exist" });
        return reply(200, [...set].map((n) => ({ name: n })));
      }
    }
    if ((m = route(/^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/))) {
      const list = this.comments.get(Number(m[1])) ?? [];
      this.comments.set(Number(m[1]), list);
      if (method === "GET") return reply(200, list);
      if (method === "POST") {
        const c: Comment = { id: this.nextId++, body: (body as { body: string }).body, user: { login: "github-actions[bot]", type: "Bot" } };
        list.push(c);
        return reply(201, c);
      }
    }
    if (method === "PATCH" && (m = route(/^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/))) {
      for (const list of this.comments.values()) {
        const c = list.find((x) => x.id === Number(m![1]));
        if (c) {
          c.body = (body as { body: string }).body;
          return reply(200, c);
        }
      }
      return reply(404, { message: "Not Found" });
    }
    return reply(404, { message: `the fake does not serve ${method} ${url.pathname}` });
  }
}
