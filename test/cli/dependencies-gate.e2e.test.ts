// A whole local gate on a service with a store of its own: perf-gate run --local from the bundle,
// a real perf-host, Debian's redis-server started per arm through service.dependencies, the
// example counter service (gRPC on GRPC_PORT through service.port_env, HTTP on PORT: $PORT_HTTP,
// its methods described by the .proto file its build ships through proto_files). Each arm must
// talk to its own Redis: the keys each Redis holds when it stops are that arm's alone. A
// dependency that never gets ready, or exits, fails the start with its own log.
import { execFile, spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { freePorts } from "../support/bench-host";
import type { Ran } from "../support/cli";
import { buildHostBinaries, repoRoot } from "../support/loadgen";
import { LocalGate } from "../support/local-gate";
import { skipIfMachineTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

const hostDir = join(repoRoot, "benchmark-host");
const redisServer = "/usr/bin/redis-server";
let dir: string;
let dumps: string;
let gate: LocalGate;
let fast: string;
let slow: string;

/** A build as a team ships it: the binary and its API's .proto file. */
async function release(name: string, tags: string[]): Promise<string> {
  const d = join(dir, name);
  mkdirSync(join(d, "bin"), { recursive: true });
  mkdirSync(join(d, "proto/counter/v1"), { recursive: true });
  copyFileSync(
    join(hostDir, "examples/counterservice/proto/counter/v1/counter.proto"),
    join(d, "proto/counter/v1/counter.proto"),
  );
  await promisify(execFile)(
    "go",
    ["build", ...tags, "-o", join(d, "bin/counterservice"), "./examples/counterservice"],
    { cwd: hostDir },
  );
  return d;
}

/** The gate's config; each Redis saves its keys on stop into dumps/, named by its own port. */
const config = (ready: string) => `service:
  command: ["./bin/counterservice"]
  port_env: GRPC_PORT
  ports: [http]
  env:
    PORT: $PORT_HTTP
    REDIS_URL: 127.0.0.1:$PORT_REDIS
  dependencies:
    - name: redis
      command: [${redisServer}, --port, $PORT_REDIS, --bind, 127.0.0.1, --dir, ${dumps}, --dbfilename, dump-$PORT_REDIS.rdb, --save, "3600 1", --appendonly, "no"]
      ready: ${ready}
  health_check: grpc
  health_timeout_seconds: 5
slo: {percentile: 50, budget_ms: 50}
slices: {seconds: 0.5, pairs: 6, order: balanced}
warmup_seconds: 0.5
workloads:
  - name: hit
    rates: [200]
    protocol: grpc
    connections: 2
    proto_files: [counter/v1/counter.proto]
    proto_import_paths: [proto]
    requests:
      - grpc: {method: counter.v1.Counter/Hit, message: {key: "{{arm}}-{{rand 20}}"}}
`;

/** perf-gate run --local with cfg, as --json; with debug, a failure prints whole (PERF_GATE_DEBUG=1), its log tail included. */
async function perfGate(root: string, cfg: string, args: string[], { debug = false } = {}): Promise<Ran> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(file, cfg);
  if (debug) process.env.PERF_GATE_DEBUG = "1";
  try {
    return await gate.run(
      root,
      "--max-foreign-cores",
      "64",
      "--settle-seconds",
      "1",
      "--config",
      file,
      "--json",
      ...args,
    );
  } finally {
    delete process.env.PERF_GATE_DEBUG;
  }
}

/** The keys (with their counts) a Redis saved on stop: read back by a real redis-server of its own. */
async function savedKeys(redisPort: number): Promise<Map<string, number>> {
  const file = `dump-${redisPort}.rdb`;
  if (!existsSync(join(dumps, file))) throw new Error(`the Redis on port ${redisPort} saved nothing in ${dumps}`);
  const [port] = await freePorts(1);
  const server = spawn(
    redisServer,
    ["--port", String(port!), "--bind", "127.0.0.1", "--dir", dumps, "--dbfilename", file, "--save", ""],
    { stdio: "ignore" },
  );
  try {
    const cli = (...args: string[]) =>
      spawnSync("/usr/bin/redis-cli", ["-p", String(port!), ...args], { encoding: "utf8" });
    for (let i = 0; i < 100 && cli("ping").stdout.trim() !== "PONG"; i++) await new Promise((r) => setTimeout(r, 50));
    const keys = cli("--scan").stdout.split("\n").filter(Boolean).sort();
    return new Map(keys.map((k) => [k, Number(cli("get", k).stdout.trim())]));
  } finally {
    server.kill("SIGKILL");
  }
}

interface ArmStart {
  ports: Record<string, number>;
  dependencies?: {
    name: string;
    ports: Record<string, number>;
    ready_seconds: number;
    cpu_seconds?: number;
    rss_bytes?: number;
  }[];
}

/** Each arm's Redis port and what it used, from the run's result.json. */
function arms(out: string): Record<"champion" | "challenger", ArmStart> {
  const [result] = JSON.parse(readFileSync(join(out, "result.json"), "utf8")) as {
    arms: Record<"champion" | "challenger", ArmStart>;
  }[];
  return result!.arms;
}

/** Every key of each arm's Redis is that arm's own, and each Redis counted some hits. */
async function expectOwnRedis(out: string, label: string) {
  const a = arms(out);
  for (const arm of ["champion", "challenger"] as const) {
    const dep = a[arm].dependencies?.[0];
    expect(dep, `${arm} dependencies in result.json`).toMatchObject({
      name: "redis",
      ports: { PORT_REDIS: expect.any(Number) },
    });
    expect(a[arm].ports.PORT_REDIS).toBe(dep!.ports.PORT_REDIS);
    const keys = await savedKeys(dep!.ports.PORT_REDIS!);
    const hits = [...keys.values()].reduce((x, y) => x + y, 0);
    console.log(
      `[dependencies ${label}] ${arm}: its Redis on :${dep!.ports.PORT_REDIS} ready in ${dep!.ready_seconds.toFixed(3)} s, used ${dep!.cpu_seconds?.toFixed(3)} s CPU and ${((dep!.rss_bytes ?? 0) / 1e6).toFixed(1)} MB; holds ${keys.size} keys, ${hits} hits`,
    );
    expect(keys.size).toBeGreaterThan(0);
    expect([...keys.keys()].filter((k) => !k.startsWith(`${arm}-`))).toEqual([]);
    expect(dep!.cpu_seconds).toBeGreaterThan(0);
    expect(dep!.rss_bytes).toBeGreaterThan(0);
  }
  expect(a.champion.ports.PORT_REDIS).not.toBe(a.challenger.ports.PORT_REDIS);
  expect(a.champion.ports.PORT_HTTP).not.toBe(a.challenger.ports.PORT_HTTP);
}

beforeAll(async () => {
  dir = scratchDir("deps");
  chmodSync(dir, 0o755);
  dumps = join(dir, "dumps");
  mkdirSync(dumps);
  [fast, slow] = await Promise.all([release("fast", []), release("slow", ["-tags", "slow"]), buildHostBinaries()]);
  gate = await LocalGate.onFreePorts(dir);
}, 180_000);

afterAll(() => {
  if (dir) for (const h of ["h1", "h2", "h3", "h4"]) gate.stop(join(dir, h));
});

/** The processes still running whose command line holds text: none of an arm may outlive its run. */
const running = (text: string) =>
  spawnSync("pgrep", ["-af", text], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((l) => l && !l.includes("pgrep"));

/** The outcome, or a skip when the host could not vouch for its measurement. */
function measured(ctx: TestContext, r: Ran) {
  skipIfMachineTooBusy(ctx, r);
  expect(r.code, r.stderr).toBeLessThan(2);
  return JSON.parse(r.stdout) as { verdict: string; estimate_ms: number; ci_ms: number[] };
}

describe.skipIf(!existsSync(redisServer))("a gate on a service with a Redis per arm", () => {
  it("gates a challenger 2 ms slower per call red, each arm counting in its own Redis", async (ctx) => {
    const out = join(dir, "out-gate");
    const r = await perfGate(join(dir, "h1"), config("{tcp: PORT_REDIS}"), [
      "--champion",
      fast,
      "--challenger",
      slow,
      "--out",
      out,
    ]);
    expect(running(`--dir ${dumps}`)).toEqual([]);
    const g = measured(ctx, r);
    console.log(
      `[dependencies gate] slow: ${g.verdict} ${g.estimate_ms.toFixed(3)} ms, 95% CI ${JSON.stringify(g.ci_ms)}`,
    );
    expect(g.verdict).toBe("red");
    await expectOwnRedis(out, "gate");
  }, 150_000);

  it("runs an A/A on the champion, a Redis per arm, ready by its own command", async (ctx) => {
    const out = join(dir, "out-aa");
    const r = await perfGate(join(dir, "h2"), config("{command: [/usr/bin/redis-cli, -p, $PORT_REDIS, ping]}"), [
      "--champion",
      fast,
      "--aa",
      "--out",
      out,
    ]);
    expect(running(`--dir ${dumps}`)).toEqual([]);
    const g = measured(ctx, r);
    console.log(`[dependencies A/A] ${g.verdict} ${g.estimate_ms.toFixed(3)} ms, 95% CI ${JSON.stringify(g.ci_ms)}`);
    await expectOwnRedis(out, "A/A");
  }, 150_000);

  it("a dependency that never gets ready fails the start with its own log", async () => {
    const never = config("{tcp: PORT_REDIS}")
      .replace(
        /command: \[\/usr\/bin\/redis-server[^\n]*/,
        'command: [/bin/sh, -c, "echo fake store listening nowhere, asked for $PORT_REDIS; exec sleep 30"]',
      )
      .replace("health_timeout_seconds: 5", "health_timeout_seconds: 5\n  ready_timeout_seconds: 1.5");
    const r = await perfGate(join(dir, "h3"), never, ["--champion", fast, "--challenger", fast], { debug: true });
    console.log(`[dependencies never ready] exit ${r.code}: ${r.stderr.trim()}`);
    expect(r.code).toBe(2);
    expect(running("fake store listening nowhere")).toEqual([]);
    expect(r.stderr).toMatch(
      /candidate champion [0-9a-f]{40}: dependency redis: not ready after 1\.5s: nothing accepted a TCP connection on 127\.0\.0\.1:\d+/,
    );
    expect(r.stderr).toMatch(/its log \(\S+\.redis\.log\) ends:.*\n(.*\n)*fake store listening nowhere, asked for \d+/);
  }, 60_000);

  it("a dependency that exits fails the start with its own log", async () => {
    const bad = config("{tcp: PORT_REDIS}").replace('--appendonly, "no"', '--appendonly, "no", --no-such-directive, x');
    const r = await perfGate(join(dir, "h4"), bad, ["--champion", fast, "--challenger", fast], { debug: true });
    console.log(`[dependencies exits] exit ${r.code}: ${r.stderr.trim()}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /dependency redis: exited before it was ready \(exit status 1\); its log \(\S+\.redis\.log\) ends:/,
    );
    expect(r.stderr).toContain("Bad directive or wrong number of arguments");
  }, 60_000);
});
