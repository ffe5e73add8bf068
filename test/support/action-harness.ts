// Everything an end-to-end test of the action needs: the GitHub fake on loopback, a real sshd
// + perf-host serving the example service as champion, and the bundle run under Node 24 with
// the host's inputs.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { type ActionRun, type RunOptions, runAction } from "./action-runner";
import { TestHost } from "./bench-host";
import { ACTIONS_BOT, type Comment, DEFAULT_TOKEN, GitHubFake, userNamed } from "./github-fake";
import { scratchDir } from "./scratch";

// The SLO is at p90: 200 req/s in 1 s slices records ~160 requests per slice, enough for p90
// (100) but not for a stable p99 (1,000), and the tests keep their runs short.
export const E2E_CONFIG = `service:
  command: ["./start.sh"]
  health_timeout_seconds: 10
slo:
  percentile: 90
  budget_ms: 20
slices: {seconds: 1, pairs: 6, max_extensions: 0}  # these tests count runs; test/cli/run.e2e.test.ts extends
warmup_seconds: 2
workloads:
  - name: work
    rates: [200]
    connections: 4
    requests:
      - path: /work?key={{rand 100}}
`;

export const REPOSITORY = "Codertocat/Hello-World";

/** A real webhook payload from @octokit/webhooks-examples, copied so a test may change it. */
export function examplePayload<T>(event: string, pick: (p: T) => boolean = () => true): T {
  const list = (examples as unknown as { name: string; examples: T[] }[]).find((e) => e.name === event)!.examples;
  return structuredClone(list.find(pick)!);
}

export type PullRequestPayload = {
  action: string;
  pull_request: {
    number: number;
    head: { sha: string; repo: { full_name: string; fork: boolean } };
    base: { sha: string };
  };
  label?: { name: string };
  sender: { login: string };
};

export type CommentPayload = {
  action: string;
  issue: { number: number; pull_request?: object };
  comment: { id: number; body: string; created_at: string; user: { login: string; type: string } };
};

/** The mark of a comment by the action: the sticky comment's first line. */
const STICKY = "<!-- perf-gate:sticky -->";

/** The action's bundle against the GitHub fake, for the modes that never touch the host. */
export class GitHubHarness {
  private runCounter = 1000;

  protected constructor(
    readonly fake: GitHubFake,
    readonly api: string,
  ) {}

  static async start(): Promise<GitHubHarness> {
    const fake = new GitHubFake();
    return new GitHubHarness(fake, await fake.start());
  }

  async stop(): Promise<void> {
    await this.fake.stop();
  }

  /** The action's inputs without the host's. */
  inputs(mode: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      "github-token": DEFAULT_TOKEN,
      config: ".github/perf-gate.yml",
      mode,
      "on-infrastructure-failure": "fail",
      "busy-timeout-minutes": "5",
      ...extra,
    };
  }

  /** Runs the main step (or the post step) for one event. */
  run(
    inputs: Record<string, string>,
    eventName: string,
    payload: unknown,
    env: Record<string, string> = {},
    o: RunOptions = {},
  ): Promise<ActionRun> {
    return this.step(
      inputs,
      {
        GITHUB_EVENT_NAME: eventName,
        GITHUB_API_URL: this.api,
        GITHUB_REPOSITORY: REPOSITORY,
        GITHUB_RUN_ID: String(this.runCounter++),
        GITHUB_RUN_ATTEMPT: "1",
        GITHUB_SHA: "e".repeat(40),
        PERF_GATE_GITHUB_UNPACED: "1",
        ...env,
      },
      payload,
      o,
    );
  }

  /** The step as the runner runs it: dist/index.js (or dist/post.js) under Node 24. */
  protected step(
    inputs: Record<string, string>,
    env: Record<string, string>,
    payload: unknown,
    o: RunOptions,
  ): Promise<ActionRun> {
    return runAction(inputs, env, payload, o);
  }

  lastCheck() {
    return this.fake.checkRuns.at(-1)!;
  }

  /** The check runs on a commit, oldest first. */
  checksOn(sha: string, name = "perf-gate") {
    return this.fake.checkRuns.filter((c) => c.head_sha === sha && c.name === name);
  }

  /** GitHub's view of a pull request now: its head (a fork's, when headRepo is another repository) and base. */
  setPull(pr: number, headSha: string, o: { baseSha: string; headRepo?: string; headPushedAt?: string }): void {
    this.fake.pulls.set(pr, {
      headSha,
      baseSha: o.baseSha,
      baseRef: "master",
      state: "open",
      headRepo: o.headRepo ?? REPOSITORY,
      headPushedAt: o.headPushedAt ?? "2026-11-21T09:00:00Z",
    });
  }

  /** A real pull_request payload with this action, for a pull request's head and base; a fork's, labelled, or sent by another user when asked. */
  pullRequestEvent(
    action: string,
    pr: number,
    head: string,
    baseSha: string,
    o: { fork?: boolean; label?: string; sender?: string } = {},
  ): PullRequestPayload {
    // The example of this action where GitHub's examples have one, else an opened one.
    const p =
      examplePayload<PullRequestPayload>("pull_request", (e) => e.action === action) ??
      examplePayload<PullRequestPayload>("pull_request", (e) => e.action === "opened");
    p.action = action;
    p.pull_request.number = pr;
    p.pull_request.head.sha = head;
    p.pull_request.base.sha = baseSha;
    if (o.fork) p.pull_request.head.repo = { ...p.pull_request.head.repo, full_name: "forker/Hello-World", fork: true };
    if (o.label) p.label = { name: o.label };
    if (o.sender) p.sender = { ...p.sender, login: o.sender };
    return p;
  }

  /** A real issue_comment payload of a comment GitHub now holds, on a pull request as GitHub marks one. */
  commentEvent(pr: number, body: string, login = "Codertocat", type: "User" | "Bot" = "User"): CommentPayload {
    const held = this.fake.addComment(pr, body, { ...userNamed(login), type });
    const p = examplePayload<CommentPayload>("issue_comment", (e) => e.action === "created");
    p.issue.number = pr;
    p.issue.pull_request = { url: `https://api.github.com/repos/${REPOSITORY}/pulls/${pr}` };
    p.comment = {
      ...p.comment,
      id: held.id,
      body,
      created_at: "2026-11-21T10:00:00Z",
      user: { ...p.comment.user, login, type },
    };
    return p;
  }

  /** The action's own comments on a pull request. */
  ours(pr: number): Comment[] {
    return (this.fake.comments.get(pr) ?? []).filter((c) => c.user.login === ACTIONS_BOT.login);
  }

  /** The action's replies to commands on a pull request, oldest first. */
  replies(pr: number): string[] {
    return this.ours(pr)
      .filter((c) => !c.body.startsWith(STICKY))
      .map((c) => c.body);
  }

  /** The action's sticky comment on a pull request (one at most). */
  sticky(pr: number): Comment[] {
    return this.ours(pr).filter((c) => c.body.startsWith(STICKY));
  }
}

export class ActionHarness extends GitHubHarness {
  private constructor(
    fake: GitHubFake,
    api: string,
    readonly host: TestHost,
  ) {
    super(fake, api);
  }

  /** Starts the fake and the host, and makes `championSha` the champion: the fast build ("v1"), or the release and service given. */
  static override async start(
    championSha = "0".repeat(40),
    champion?: { release: string; service: object },
  ): Promise<ActionHarness> {
    const fake = new GitHubFake();
    const api = await fake.start();
    const h = new ActionHarness(fake, api, await TestHost.start());
    await h.installChampion(championSha, champion?.release ?? h.host.release("fast", "v1"), champion?.service);
    return h;
  }

  /** Makes a release the champion as an operator would, over ssh, without the action. */
  async installChampion(sha: string, release: string, service: object = { command: ["./start.sh"] }): Promise<void> {
    const tarball = join(scratchDir("champion"), "release.tar.gz");
    execFileSync("tar", ["-czf", tarball, "-C", release, "."]);
    for (const [cmd, input] of [
      [`deploy champion ${sha}`, readFileSync(tarball)],
      [`promote ${sha}`, JSON.stringify(service)],
    ] as const) {
      const r = await this.host.ssh(cmd, input);
      if (r.code !== 0) throw new Error(`${cmd}: ${r.stderr}`);
    }
  }

  override async stop(): Promise<void> {
    this.host.stop();
    await super.stop();
  }

  /** The action's inputs for this host; `mode: command` and `mode: access` get none of the host's. */
  override inputs(mode: string, extra: Record<string, string> = {}): Record<string, string> {
    const i = this.host.info;
    const hostInputs: Record<string, string> =
      mode === "command" || mode === "access"
        ? {}
        : {
            host: "127.0.0.1",
            port: String(i.ssh_port),
            user: i.user,
            "ssh-key": readFileSync(i.key, "utf8"),
            "known-hosts": i.known_hosts_line,
          };
    return super.inputs(mode, { ...hostInputs, ...extra });
  }

  /** SSH logins the host's sshd accepted so far: a refused command must not add one. */
  acceptedLogins(): number {
    return (readFileSync(join(this.host.info.dir, "sshd.log"), "utf8").match(/Accepted publickey/g) ?? []).length;
  }

  /** What the champion port serves: "fast v1", or "down" when nothing answers. */
  async championVersion(): Promise<string> {
    try {
      return (await (await fetch(`http://127.0.0.1:${this.host.info.champion_port}/version`)).text()).trim();
    } catch {
      return "down";
    }
  }

  async hostStatus(): Promise<{
    champion: string;
    previous: string;
    releases: string[];
    floors: Record<string, { half_width_ms: number; ci_ms: number[]; run_id: string }>;
  }> {
    const r = await this.host.ssh("status");
    if (r.code !== 0) throw new Error(`status: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }
}
