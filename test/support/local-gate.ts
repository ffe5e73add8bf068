// `perf-gate run --local` from the bundle against a real perf-host on this machine, for the CLI
// tests: the command and the host's own verbs.
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { userInfo } from "node:os";
import { join } from "node:path";
import { freePorts } from "./bench-host";
import { cli, perfGate, type Ran } from "./cli";
import { repoRoot } from "./loadgen";

export const perfHost = join(repoRoot, "benchmark-host/bin/perf-host");

export class LocalGate {
  constructor(
    /** Where the command runs and relative paths resolve. */
    readonly cwd: string,
    /** The champion's port and the challenger's. */
    readonly ports: readonly [number, number],
  ) {}

  /** A local gate on two ports free now (freePorts: other tests may run beside it). */
  static async onFreePorts(cwd: string): Promise<LocalGate> {
    const [champion, challenger] = await freePorts(2);
    return new LocalGate(cwd, [champion!, challenger!]);
  }

  /** The command line of perf-gate run --local on a host rooted at root, before its own arguments. */
  argv(root: string): string[] {
    return [cli, ...this.args(root)];
  }

  private args(root: string): string[] {
    return [
      "run",
      "--local",
      "--root",
      root,
      "--perf-host",
      perfHost,
      "--champion-port",
      String(this.ports[0]),
      "--challenger-port",
      String(this.ports[1]),
    ];
  }

  /** perf-gate run --local on a host rooted at root. */
  run(root: string, ...args: string[]): Promise<Ran> {
    return perfGate([...this.args(root), ...args], { cwd: this.cwd, timeout: 240_000 });
  }

  hostFlags(root: string): string[] {
    return [
      "--root",
      root,
      "--service-user",
      userInfo().username,
      "--champion-port",
      String(this.ports[0]),
      "--challenger-port",
      String(this.ports[1]),
    ];
  }

  /** perf-host stop: the local verb that stops a host's champion supervisor and its champion. */
  stop(root: string): SpawnSyncReturns<Buffer> {
    return spawnSync(perfHost, ["stop", ...this.hostFlags(root), "--lock-wait", "60s"]);
  }
}
