// A whole local gate on a gRPC service: perf-gate run --local from the bundle, a real
// perf-host, the example gRPC service built on grpc-go (helloworld.Greeter, the standard health
// service, reflection) in both arms. A challenger 2 ms slower per call is red; the same build is
// not red or green.
import { execFile, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { aaAllowingChance } from "../support/aa-by-chance";
import { buildHostBinaries, repoRoot } from "../support/loadgen";
import { LocalGate } from "../support/local-gate";
import { machineTooBusy, untilQuiet } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

const hostDir = join(repoRoot, "benchmark-host");
let dir: string;
let local: LocalGate;

async function release(name: string, tags: string[]): Promise<string> {
  const d = join(dir, name);
  mkdirSync(join(d, "bin"), { recursive: true });
  await promisify(execFile)("go", ["build", ...tags, "-o", join(d, "bin/grpcservice"), "./examples/grpcservice"], {
    cwd: hostDir,
  });
  return d;
}

const config = `service:
  command: ["./bin/grpcservice"]
  health_check: grpc
  health_timeout_seconds: 5
slo: {percentile: 50, budget_ms: 50}
slices: {seconds: 0.5, pairs: 6, order: balanced}  # balanced: no arm always measured first
warmup_seconds: 0.5
workloads:
  - name: greet
    rates: [200]
    protocol: grpc
    connections: 2
    requests:
      - grpc: {method: helloworld.Greeter/SayHello, message: {name: "user-{{rand 100}}"}}
`;

let fast: string;
let slow: string;

beforeAll(async () => {
  dir = scratchDir("grpc");
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "perf-gate.yml"), config);
  [fast, slow] = await Promise.all([release("fast", []), release("slow", ["-tags", "slow"]), buildHostBinaries()]);
  local = await LocalGate.onFreePorts(dir);
}, 120_000);

afterAll(() => {
  if (dir) for (const h of ["h1", "h2", "h3"]) spawnSync("pkill", ["-f", `champion-daemon --root ${join(dir, h)}`]);
});

/** Runs the gate, measuring again while the machine is too busy for it (the one rule). */
function gate(
  ctx: TestContext,
  root: string,
  challenger: string,
): Promise<{ verdict: string; estimate_ms: number; ci_ms: number[] }> {
  return untilQuiet(ctx, async (n) => {
    const r = await local.run(
      root,
      "--config",
      join(dir, "perf-gate.yml"),
      "--json",
      "--champion",
      fast,
      "--challenger",
      challenger,
      "--out",
      join(root, `out${n}`),
    );
    spawnSync("pkill", ["-f", `champion-daemon --root ${root}`]);
    const busy = machineTooBusy(r);
    if (busy) return { busy };
    if (r.code === 2 || !r.stdout.trim()) throw new Error(`perf-gate run exited ${r.code}: ${r.stderr.slice(-1500)}`);
    return { value: JSON.parse(r.stdout) };
  });
}

describe("a gate on a gRPC service", () => {
  it("calls a challenger 2 ms slower per call red", async (ctx) => {
    const r = await gate(ctx, join(dir, "h1"), slow);
    console.log(`[grpc gate] slow: ${r.verdict} ${r.estimate_ms.toFixed(3)} ms, 95% CI ${JSON.stringify(r.ci_ms)}`);
    expect(r.verdict).toBe("red");
    expect(r.estimate_ms).toBeGreaterThan(1.5);
  }, 90_000);

  it("calls the same build grey", async (ctx) => {
    const g = await aaAllowingChance(
      (attempt) => gate(ctx, join(dir, `h${2 + attempt}`), fast),
      (r) => r.verdict !== "grey",
    );
    console.log(`[grpc gate] same: ${g.verdict} ${g.estimate_ms.toFixed(3)} ms, 95% CI ${JSON.stringify(g.ci_ms)}`);
    expect(g.verdict).toBe("grey");
    expect(Math.abs(g.estimate_ms)).toBeLessThan(0.5);
  }, 90_000);
});
