// A pool of benchmark hosts on this machine for the action's bundle: each installed by
// install.sh with users, a cgroup subtree, a packet filter, ports and a sshd of its own
// (testhost --install), all accepting one CI key, as a team's hosts would; and the GitHub fake.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GitHubHarness } from "./action-harness";
import { TestHost } from "./bench-host";
import { DEFAULT_TOKEN, GitHubFake } from "./github-fake";
import { scratchDir } from "./scratch";

export class PoolHarness extends GitHubHarness {
  /** sshd listeners this harness started again after a test took a host down. */
  private restarted: number[] = [];

  private constructor(
    fake: GitHubFake,
    api: string,
    readonly hosts: TestHost[],
  ) {
    super(fake, api);
  }

  /**
   * Installs `size` hosts, one after the other (install.sh builds the checkout the first time).
   * `args` are more install.sh options, for every host.
   */
  static async startPool(size: number, args: string[]): Promise<PoolHarness> {
    const bin = await TestHost.build();
    const hosts: TestHost[] = [];
    try {
      for (let i = 0; i < size; i++)
        hosts.push(await TestHost.install(bin, { args, ...(hosts[0] ? { key: hosts[0].info.key } : {}) }));
    } catch (e) {
      await Promise.all(hosts.map((h) => h.stop()));
      throw e;
    }
    const fake = new GitHubFake();
    return new PoolHarness(fake, await fake.start(), hosts);
  }

  /** How the pool's entries name each host: its own login, on its own sshd port. */
  entry(i: number): string {
    const h = this.hosts[i]!.info;
    return `${h.user}@127.0.0.1:${h.ssh_port}`;
  }

  /** How reports name the host. */
  name(i: number): string {
    return `127.0.0.1:${this.hosts[i]!.info.ssh_port}`;
  }

  indexOf(name: string): number {
    return this.hosts.findIndex((_, i) => this.name(i) === name);
  }

  /** The action's inputs for the whole pool (command and access modes get none of the host's). */
  override inputs(mode: string, extra: Record<string, string> = {}): Record<string, string> {
    const pool: Record<string, string> =
      mode === "command" || mode === "access"
        ? {}
        : {
            host: this.hosts.map((_, i) => this.entry(i)).join(", "),
            "ssh-key": readFileSync(this.hosts[0]!.info.key, "utf8"),
            "known-hosts": this.hosts.map((h) => h.info.known_hosts_line).join("\n"),
          };
    return {
      "github-token": DEFAULT_TOKEN,
      config: ".github/perf-gate.yml",
      mode,
      "on-infrastructure-failure": "fail",
      "busy-timeout-minutes": "5",
      ...pool,
      ...extra,
    };
  }

  /** Makes a release the champion of every host as an operator would, over ssh. */
  async installChampion(sha: string, release: string, service: object = { command: ["./start.sh"] }): Promise<void> {
    const tarball = join(scratchDir("pool-champion"), "release.tar.gz");
    execFileSync("tar", ["-czf", tarball, "-C", release, "."]);
    for (const host of this.hosts) {
      for (const [cmd, input] of [
        [`deploy champion ${sha}`, readFileSync(tarball)],
        [`promote ${sha}`, JSON.stringify(service)],
      ] as const) {
        const r = await host.ssh(cmd, input);
        if (r.code !== 0) throw new Error(`${cmd}: ${r.stderr}`);
      }
    }
  }

  async status(i: number): Promise<{
    champion: string;
    champion_since?: string;
    previous: string;
    lock: object | null;
    floors: Record<string, { run_id: string; half_width_ms: number }>;
  }> {
    const r = await this.hosts[i]!.ssh("status");
    if (r.code !== 0) throw new Error(`status: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  /** The runs of a build on a host, as perf-host runs lists them. */
  async runsOf(i: number, sha: string): Promise<{ run_id: string; kind: string; started: string; ended: string }[]> {
    const r = await this.hosts[i]!.ssh(`runs ${sha}`);
    if (r.code !== 0) throw new Error(`runs: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  /** What a host's champion port serves: "fast v1", or "down". */
  async championVersion(i: number): Promise<string> {
    try {
      return (await (await fetch(`http://127.0.0.1:${this.hosts[i]!.info.champion_port}/version`)).text()).trim();
    } catch {
      return "down";
    }
  }

  /** Takes a host's sshd down: the host keeps running, and cannot be reached. */
  sshdDown(i: number): void {
    process.kill(this.hosts[i]!.info.sshd_pid, "SIGKILL");
  }

  /** Starts the host's sshd again with its own config (the one testhost wrote). */
  async sshdUp(i: number): Promise<void> {
    const info = this.hosts[i]!.info;
    const sshd = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", join(info.dir, "sshd_config")], { stdio: "ignore" });
    this.restarted.push(sshd.pid!);
    for (let tries = 0; tries < 100; tries++) {
      if ((await this.hosts[i]!.ssh("status")).code === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`sshd of ${this.name(i)} did not come back`);
  }

  override async stop(): Promise<void> {
    for (const pid of this.restarted) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await Promise.all(this.hosts.map((h) => h.stop()));
    await super.stop();
  }
}
