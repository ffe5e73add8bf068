// Everything an end-to-end test of the action needs: the GitHub fake on loopback, a real sshd
// + perf-host serving the example service as champion, and the bundle run under Node 24 with
// the host's inputs.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { type ActionRun, type RunOptions, runAction } from "./action-runner";
import { TestHost } from "./bench-host";
import { DEFAULT_TOKEN, GitHubFake } from "./github-fake";

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
    return { "github-token": DEFAULT_TOKEN, config: ".github/perf-gate.yml", mode, "on-infrastructure-failure": "fail", "busy-timeout-minutes": "5", ...extra };
  }

  /** Runs dist/index.js (or the post step) for one event. */
  run(inputs: Record<string, string>, eventName: string, payload: unknown, env: Record<string, string> = {}, o: RunOptions = {}): Promise<ActionRun> {
    return runAction(inputs, {
      GITHUB_EVENT_NAME: eventName, GITHUB_API_URL: this.api, GITHUB_REPOSITORY: REPOSITORY,
      GITHUB_RUN_ID: String(this.runCounter++), GITHUB_RUN_ATTEMPT: "1", GITHUB_SHA: "e".repeat(40), ...env,
    }, payload, o);
  }

  lastCheck() {
    return this.fake.checkRuns.at(-1)!;
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
  static override async start(championSha = "0".repeat(40), champion?: { release: string; service: object }): Promise<ActionHarness> {
    const fake = new GitHubFake();
    const api = await fake.start();
    const h = new ActionHarness(fake, api, await TestHost.start());
    await h.installChampion(championSha, champion?.release ?? h.host.release("fast", "v1"), champion?.service);
    return h;
  }

  /** Makes a release the champion as an operator would, over ssh, without the action. */
  async installChampion(sha: string, release: string, service: object = { command: ["./start.sh"] }): Promise<void> {
    const tarball = join(tmpdir(), `perf-gate-champion-${process.pid}-${sha.slice(0, 7)}.tar.gz`);
    execFileSync("tar", ["-czf", tarball, "-C", release, "."]);
    for (const [cmd, input] of [[`deploy champion ${sha}`, readFileSync(tarball)], [`promote ${sha}`, JSON.stringify(service)]] as const) {
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
    const hostInputs: Record<string, string> = mode === "command" || mode === "access" ? {} : {
      host: "127.0.0.1", port: String(i.ssh_port), user: i.user, "ssh-key": readFileSync(i.key, "utf8"), "known-hosts": i.known_hosts_line,
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

  async hostStatus(): Promise<{ champion: string; previous: string; releases: string[]; floors: Record<string, { half_width_ms: number; ci_ms: number[]; run_id: string }> }> {
    const r = await this.host.ssh("status");
    if (r.code !== 0) throw new Error(`status: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }
}
