// `perf-gate run --local` from the bundle against a real perf-host on this machine, for the CLI
// tests: the command, the host's own verbs, and the one rule by which a test on a real host says
// "machine too busy" instead of asserting on a measurement the host could not vouch for.
import { execFile, spawnSync } from "node:child_process";
import { userInfo } from "node:os";
import { join } from "node:path";
import type { TestContext } from "vitest";
import { repoRoot } from "./loadgen";

export const cli = join(repoRoot, "dist/cli.js");
export const perfHost = join(repoRoot, "benchmark-host/bin/perf-host");

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export class LocalGate {
  constructor(
    /** Where the command runs and relative paths resolve. */
    readonly cwd: string,
    /** The champion's port and the challenger's. */
    readonly ports: readonly [number, number],
  ) {}

  /** The command line of perf-gate run --local on a host rooted at root, before its own arguments. */
  argv(root: string): string[] {
    return [cli, "run", "--local", "--root", root, "--perf-host", perfHost, "--champion-port", String(this.ports[0]), "--challenger-port", String(this.ports[1])];
  }

  /** perf-gate run --local on a host rooted at root. */
  run(root: string, ...args: string[]): Promise<Ran> {
    return new Promise((resolve) => {
      execFile(process.execPath, [...this.argv(root), ...args],
        { cwd: this.cwd, timeout: 240_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
  }

  hostFlags(root: string): string[] {
    return ["--root", root, "--service-user", userInfo().username, "--champion-port", String(this.ports[0]), "--challenger-port", String(this.ports[1])];
  }

  /** perf-host stop: the local verb that stops a host's champion supervisor and its champion. */
  stop(root: string): void {
    spawnSync(perfHost, ["stop", ...this.hostFlags(root), "--lock-wait", "60s"]);
  }
}

/**
 * The one "machine too busy" rule: a run the host could not vouch for (its load generator fell
 * behind, or other work took its CPUs) exits 2 saying "could not measure"; a test whose premise
 * is a measurement skips then, naming why, rather than asserting on it.
 */
export function skipIfMachineTooBusy(ctx: TestContext, r: Ran): void {
  const busy = machineTooBusy(r);
  if (busy) ctx.skip(`machine too busy: ${busy}`);
}

/** Why a run could not vouch for its measurement (the host or its generator disturbed), or null. */
export function machineTooBusy(r: Ran): string | null {
  const busy = /could not measure: the (load generator|host) was disturbed[^\n]*/.exec(r.stderr + r.stdout);
  return r.code === 2 && busy ? busy[0] : null;
}
