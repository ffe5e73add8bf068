// A real benchmark host for the action's tests: the testhost command (benchmark-host/e2e/
// testhost) starts sshd with perf-host as its forced command, as install.sh sets up a host.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { buildHostBinaries, repoRoot } from "./loadgen";
import { scratchDir } from "./scratch";

const exec = promisify(execFile);
const hostDir = join(repoRoot, "benchmark-host");

export interface BenchHost {
  dir: string;
  root: string;
  user: string;
  ssh_port: number;
  champion_port: number;
  challenger_port: number;
  key: string;
  known_hosts: string;
  known_hosts_line: string;
  sshd_pid: number;
}

/** sshd switches users, so the tests through a real sshd need root, as the Go e2e tests do. */
export const asRoot = process.getuid?.() === 0;
if (!asRoot) console.warn("not root: the tests through a real sshd are skipped (CI runs them as root)");

/** Builds the example service's fast, slow and slowreport (only /report slower) variants into a new directory. */
export async function buildServiceBinaries(): Promise<string> {
  const bin = scratchDir("test-bin");
  chmodSync(bin, 0o755);
  await Promise.all([
    exec("go", ["build", "-o", join(bin, "service-fast"), "./examples/service"], { cwd: hostDir }),
    exec("go", ["build", "-tags", "slow", "-o", join(bin, "service-slow"), "./examples/service"], { cwd: hostDir }),
    exec("go", ["build", "-tags", "slowreport", "-o", join(bin, "service-slowreport"), "./examples/service"], {
      cwd: hostDir,
    }),
  ]);
  return bin;
}

/** Starts an example service binary on a port (with extra environment) and waits for its /health. */
export async function serveExample(
  binary: string,
  port: number,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const p = spawn(binary, [], { env: { PORT: String(port), ...env }, stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    if ((await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok) return p;
    await new Promise((r) => setTimeout(r, 50));
  }
  p.kill();
  throw new Error(`${binary} did not come up on :${port}`);
}

/**
 * Ports free on loopback, all held until every one is chosen, so they differ. They come from outside
 * the kernel's ephemeral range, as the host's free ports do (service.FreePorts): a port from inside
 * it, free when chosen, is any outgoing connection's to take before the test's service binds it
 * (docs/design/0033-ports-outside-the-ephemeral-range.md).
 */
export async function freePorts(n: number): Promise<number[]> {
  const [lo, hi] = testPortRange();
  const span = hi - lo + 1;
  const start = Math.floor(Math.random() * span);
  // Node listens with SO_REUSEADDR, which binds a port that still has connections in TIME_WAIT;
  // a service that binds without it would be refused that port, so such ports are passed over,
  // as service.FreePorts's probe without SO_REUSEADDR passes them over.
  const inUse = portsWithSockets();
  const held: Server[] = [];
  try {
    for (let i = 0; i < span && held.length < n; i++) {
      const port = lo + ((start + i) % span);
      const s = inUse.has(port) ? null : await listening(port);
      if (s) held.push(s);
    }
    if (held.length < n) throw new Error(`only ${held.length} of ${n} ports free in ${lo}-${hi}`);
    return held.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** The local ports of every TCP socket on the machine, in any state (TIME_WAIT included). */
export function portsWithSockets(): Set<number> {
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue; // no IPv6 on this machine
    }
    for (const line of text.split("\n").slice(1)) {
      const local = line.trim().split(/\s+/)[1]; // "0100007F:1F90": address:port, in hex
      const port = local ? Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16) : Number.NaN;
      if (Number.isInteger(port)) ports.add(port);
    }
  }
  return ports;
}

/** A server listening on the port, or null when the port is taken. */
function listening(port: number): Promise<Server | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(null));
    s.listen(port, "127.0.0.1", () => resolve(s));
  });
}

/** Where free ports come from (service.FreeRange's rule). */
function testPortRange(): [number, number] {
  const [ephemeralLo = 32768, ephemeralHi = 60999] = (() => {
    try {
      const f = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
      return f.length === 2 && f.every(Number.isInteger) ? f : [];
    } catch {
      return [];
    }
  })();
  const floor = 10000;
  const enough = 2000;
  if (ephemeralLo - floor >= enough) return [floor, ephemeralLo - 1];
  if (65535 - ephemeralHi >= enough) return [ephemeralHi + 1, 65535];
  return [floor, 65535];
}

/**
 * What the example service's slow build adds at p90, at the least: its extra hashing, about
 * 0.9 ms a request, which the gates on these machines read as 0.77 to 1.91 ms. The shared rule
 * (`untilResolved`) measures again while a grey's interval reaches it, so it must not overstate.
 */
export const SLOW_BUILD_MS = 0.5;

export class TestHost {
  private constructor(
    readonly info: BenchHost,
    private readonly proc: ChildProcess,
    readonly bin: string,
  ) {}

  /** Builds perf-host, testhost and both example service variants, then starts a host. */
  static async start(opts: { lockWait?: string } = {}): Promise<TestHost> {
    const bin = await TestHost.build();
    // The host holds its CPUs awake while measuring, as one on a VM whose idle CPUs halt should.
    return TestHost.launch(bin, [
      "--perf-host",
      join(hostDir, "bin/perf-host"),
      "--lock-wait",
      opts.lockWait ?? "60s",
      "--hold-cpus-awake",
    ]);
  }

  /** Builds perf-host, testhost and both example service variants into a new directory. */
  static async build(): Promise<string> {
    await buildHostBinaries();
    const bin = await buildServiceBinaries();
    await exec("go", ["build", "-o", join(bin, "testhost"), "./e2e/testhost"], { cwd: hostDir });
    return bin;
  }

  /**
   * A host installed by this checkout's install.sh, as on a real machine: users, a cgroup subtree,
   * a packet filter and a sshd of its own (several make a pool). `key` is the CI key to accept
   * (another host's: one key for a pool); `args` are more install.sh options.
   */
  static install(bin: string, o: { key?: string; args?: string[] } = {}): Promise<TestHost> {
    return TestHost.launch(bin, [
      "--install",
      join(hostDir, "install.sh"),
      "--install-args",
      (o.args ?? []).join(" "),
      ...(o.key ? ["--key", o.key] : []),
    ]);
  }

  private static async launch(bin: string, args: string[]): Promise<TestHost> {
    const proc = spawn(join(bin, "testhost"), args, { stdio: ["pipe", "pipe", "inherit"] });
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: proc.stdout! }).once("line", resolve);
      proc.once("exit", (code) => reject(new Error(`testhost exited ${code}`)));
    });
    return new TestHost(JSON.parse(line) as BenchHost, proc, bin);
  }

  /** Takes the host down; resolves when testhost has removed it (an installed host's users, cgroups, mounts, table). */
  stop(): Promise<void> {
    if (this.proc.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.proc.once("exit", () => resolve()));
    this.proc.stdin?.end();
    return exited;
  }

  /** Runs a perf-host verb over ssh, as an operator would. */
  async ssh(command: string, input?: string | Buffer): Promise<{ code: number; stdout: string; stderr: string }> {
    const args = [
      "-i",
      this.info.key,
      "-p",
      String(this.info.ssh_port),
      "-o",
      "BatchMode=yes",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      `UserKnownHostsFile=${this.info.known_hosts}`,
      "-o",
      "LogLevel=ERROR",
      `${this.info.user}@127.0.0.1`,
      "--",
      command,
    ];
    return new Promise((resolve) => {
      const p = spawn("ssh", args);
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d) => (stdout += d));
      p.stderr.on("data", (d) => (stderr += d));
      p.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
      p.stdin.end(input ?? "");
    });
  }

  /** A release directory: the example service (fast or slow build), its start script, a VERSION. */
  release(variant: "fast" | "slow", version: string): string {
    const dir = scratchDir(`release-${variant}`);
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, "bin"));
    copyFileSync(join(this.bin, `service-${variant}`), join(dir, "bin/service"));
    chmodSync(join(dir, "bin/service"), 0o755);
    writeFileSync(join(dir, "start.sh"), "#!/bin/sh\nexec ./bin/service\n", { mode: 0o755 });
    writeFileSync(join(dir, "VERSION"), `${version}\n`);
    return dir;
  }
}
