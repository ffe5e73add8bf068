// perf-gate capacity from the committed bundle: the host time of a config's gates and the wait
// for a host of a pool, with every assumption a flag; and what bad input is told. Also the
// pool flags of perf-gate run that fail before any host is reached.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { perfGate as run } from "../support/cli";
import { scratchDir } from "../support/scratch";

let dir: string;
const perfGate = (...args: string[]) => run(args);

// Two workloads, three rates: six runs a gate, as the issue's team has.
const CONFIG = `service: {command: ["./bin/service"]}
slo: {percentile: 99, budget_ms: 200}
workloads:
  - name: read
    rates: {production_rps: 1000, multiples: [0.5, 1, 1.5]}
    requests: [{path: /items}]
  - name: write
    rates: [300]
    requests: [{method: POST, path: /orders, body: "{}"}]
`;

beforeAll(() => {
  dir = scratchDir("capacity");
  writeFileSync(join(dir, "perf-gate.yml"), CONFIG);
});

describe("perf-gate capacity", () => {
  it("derives a gate's host time from its planned runs, and the wait for a host of each pool size", async () => {
    const r = await perfGate(
      "capacity",
      "--config",
      join(dir, "perf-gate.yml"),
      "--json",
      "--gates-per-day",
      "20,60",
      "--hosts",
      "1,2,3",
      "--extension-rate",
      "0",
    );
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout);
    // 1000 and 1500 req/s: 90 pairs of 0.5 s; 500: 45 of 1 s; 300 at p99: 36 of 1.25 s (each slice records
    // 300 requests past its 0.2 s start); each run with 10 s of warm-up and 2 s of overhead.
    expect(plan.runs.map((x: { key: string; seconds: number }) => [x.key, x.seconds])).toEqual([
      ["read@500", 102],
      ["read@1000", 102],
      ["read@1500", 102],
      ["write@300", 102],
    ]);
    expect(plan.gate).toMatchObject({ seconds: 408, maxSeconds: 1224, meanSeconds: 408, varianceSeconds2: 0 });
    expect(plan.runs.map((x: { pairs: number; sliceSeconds: number }) => [x.pairs, x.sliceSeconds])).toEqual([
      [45, 1],
      [90, 0.5],
      [90, 0.5],
      [36, 1.25],
    ]);
    // The promotion's A/A check: the first workload at its first rate, 4 pairs.
    expect(plan.promotion).toEqual({ key: "read@500", pairs: 4, seconds: 20 });
    const one = plan.rows[1].cells[0].estimate;
    // 60 gates in 8 hours of 408 s each: 85% of one host (and the promotions' share).
    expect(one.utilization).toBeCloseTo((60 / 8) * (408 / 3600) + (5 * 20) / (8 * 3600), 6);
    expect(plan.rows.map((row: { hostsNeeded: number }) => row.hostsNeeded)).toEqual([1, 2]);
  });

  it("prints the tables, naming its assumptions", async () => {
    const r = await perfGate(
      "capacity",
      "--config",
      join(dir, "perf-gate.yml"),
      "--busy-hours",
      "10",
      "--run-overhead-seconds",
      "5",
      "--landing-seconds",
      "7",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("| read@500 | 10 s | 45 pairs × 2 × 1 s = 90 s | 5 s | 105 s |");
    expect(r.stdout).toContain("| write@300 | 10 s | 36 pairs × 2 × 1.25 s = 90 s | 5 s | 105 s |");
    expect(r.stdout).toContain("| **a gate** | | | | **420 s** |");
    expect(r.stdout).toContain("in 10 busy hours");
    expect(r.stdout).toContain("a waiting gate starts on the first host freed 7 s after");
    expect(r.stdout).toMatch(/\| 160 \| over capacity \(\d+% busy\) \|/);
  });

  it.each([
    [["--hosts", "0"], /--hosts: expected a number from 1 to 64, got 0/],
    [["--hosts", "1.5,2"], /--hosts: whole numbers of hosts, got 1\.5/],
    [["--extension-rate", "1.5"], /--extension-rate: expected a number from 0 to 1, got 1.5/],
    [["--gates-per-day", "10,x"], /--gates-per-day: expected a number, got "x"/],
    [["--busy-hours", "25"], /--busy-hours: expected a number from 0.5 to 24, got 25/],
    [["--config", "/nonexistent/perf-gate.yml"], /\/nonexistent\/perf-gate.yml: cannot read the config \(ENOENT\)/],
    [["--config", "/dev/zero"], /\/dev\/zero: not a regular file: the config is read from one/],
  ])("refuses %j, naming the flag", async (args, error) => {
    const config = args.includes("--config") ? [] : ["--config", join(dir, "perf-gate.yml")];
    const r = await perfGate("capacity", ...config, ...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(error);
  });

  it("prints each of a config's problems with its line, the misspelt key first", async () => {
    const config = join(dir, "misspelt.yml");
    writeFileSync(config, CONFIG.replace("rates: [300]", "rps: 300"));
    const r = await perfGate("capacity", "--config", config);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^perf-gate capacity: \S+misspelt\.yml:8: workloads\.1\.rps: unknown key$/),
      expect.stringMatching(/^perf-gate capacity: \S+misspelt\.yml:\d+: workloads\.1\.rates: a list of req\/s/),
    ]);
  });
});

describe("perf-gate run --host with a pool", () => {
  it.each([
    [["--host", "a.example,b;c"], /--host: "b;c" is not a host/],
    [["--host", "a.example", "--host", "A.example"], /--host: A.example is listed twice/],
    [
      ["--host", "a.example,b.example:2222"],
      /--known-hosts: no line pins b.example:2222's host key: give one line per host of the pool, as install.sh prints it \("\[b.example\]:2222 ssh-ed25519 AAAA…"\)/,
    ],
    [["--host", "a.example", "--port", "0"], /--port: a port 1-65535, got "0"/],
  ])("refuses %j before reaching any host", async (args, error) => {
    const key = join(dir, "id");
    const known = join(dir, "known");
    writeFileSync(key, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    writeFileSync(known, "a.example ssh-ed25519 AAAA1\n");
    const r = await perfGate(
      "run",
      "--aa",
      "--config",
      join(dir, "perf-gate.yml"),
      "--key",
      key,
      "--known-hosts",
      known,
      ...args,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(error);
  });
});

describe("perf-gate run's builds", () => {
  it.each([
    ["--challenger", "missing", /--challenger: \S+missing: no such build/],
    ["--champion", "empty", /--champion: \S+empty: an empty directory, not a build/],
  ])("refuses %s %s before it reaches a host", async (flag, name, error) => {
    mkdirSync(join(dir, "empty"), { recursive: true });
    const other = flag === "--champion" ? ["--challenger", dir] : [];
    const root = join(dir, `never-made-${name}`);
    const r = await perfGate(
      "run",
      "--local",
      "--root",
      root,
      "--config",
      join(dir, "perf-gate.yml"),
      flag,
      join(dir, name),
      ...other,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(error);
    expect(existsSync(root)).toBe(false);
  });
});
