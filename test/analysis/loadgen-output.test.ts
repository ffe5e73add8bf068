// The verdict engine on real output of the layer below: the load generator binary against the
// example service's two builds as real processes on loopback; the slow build does ~0.6 ms
// more hashing per request (benchmark-host/examples/service/work_slow.go). The verdict is
// taken at p90: with the generator and both services on two cores, a stable p99 needs longer
// slices than a unit test should take (the action's end-to-end test judges at p99).
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseResult } from "../../src/contract/result";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { markdownReport } from "../../src/report/markdown";
import { buildServiceBinaries } from "../support/bench-host";
import { buildHostBinaries, runLoadgen } from "../support/loadgen";

const services: ChildProcess[] = [];
let fastPort = 0;
let slowPort = 0;

async function serve(binary: string, port: number): Promise<void> {
  const p = spawn(binary, [], { env: { PORT: String(port) }, stdio: "ignore" });
  services.push(p);
  for (let i = 0; i < 100; i++) {
    if ((await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${binary} did not come up on :${port}`);
}

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  fastPort = 20000 + (process.pid % 10000);
  slowPort = fastPort + 1;
  await Promise.all([serve(join(bin, "service-fast"), fastPort), serve(join(bin, "service-slow"), slowPort)]);
});
afterAll(() => {
  for (const p of services) p.kill();
});

const plan = (challengerPort: number, seed = 9) => ({
  targets: { champion: `http://127.0.0.1:${fastPort}`, challenger: `http://127.0.0.1:${challengerPort}` },
  workload: "work", rate: 300, slice_seconds: 1.5, pairs: 6, seed, warmup_seconds: 1, connections: 8,
  requests: [{ path: "/work?key={{rand 100}}" }],
});

describe("verdict on real load generator output", () => {
  it("the slow build is red and blocking, by about its extra service time", async () => {
    const result = parseResult("ab.json", await runLoadgen(plan(slowPort)));
    const a = analyze([{ name: "ab.json", result }], { ...defaultSettings, percentile: 90, sloBudgetMs: 20 });
    const h = a.headline;
    // Ground truth from the same run: the median extra time the server spent per request.
    const svc = (arm: string) => result.slices.filter((s) => s.arm === arm).map((s) => s.service_time_us.p50);
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const extraMs = (median(svc("challenger")) - median(svc("champion"))) / 1000;
    console.log(`[loadgen→verdict] A/B: ${h.estimateMs.toFixed(3)} ms, CI [${h.ciMs.map((x) => x.toFixed(3)).join(", ")}]; extra service time p50 ${extraMs.toFixed(3)} ms`);
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true); // threshold 0.2 ms on a 20 ms budget
    expect(extraMs).toBeGreaterThan(0.2);
    // The extra work is a median, so it is the p50 estimate that must match it, within half.
    // (At p90 the slow build's tail is wider still: vegeta, measuring each build alone, put
    // them 0.7 ms apart at p50 and 1.2-1.4 ms at p90 on this 2-core machine. The net/http
    // generator before issue 17 hid that under its own noise: its champion p90 read 1-4 ms.)
    const p50 = analyze([{ name: "ab.json", result }], { ...defaultSettings, percentile: 50, sloBudgetMs: 20 }).headline;
    console.log(`[loadgen→verdict] A/B at p50: ${p50.estimateMs.toFixed(3)} ms, CI [${p50.ciMs.map((x) => x.toFixed(3)).join(", ")}]`);
    expect(Math.abs(p50.estimateMs - extraMs)).toBeLessThan(0.5 * extraMs + 0.1);
    expect(h.estimateMs).toBeGreaterThan(p50.estimateMs - 0.1);
    expect(h.pairs).toBe(6);
    expect(h.flags.map((f) => f.code)).not.toContain("short_of_budget");
    expect(markdownReport(a)).toContain("🔴 red — blocking");
  });

  it("the same build on both arms is not red", async () => {
    const aa = async (seed?: number) => analyze([{ name: "aa.json", result: parseResult("aa.json", await runLoadgen(plan(fastPort, seed))) }], { ...defaultSettings, percentile: 90, sloBudgetMs: 20 });
    let a = await aa();
    // The interval has a 2.5% false-red rate by design (simulation.test.ts); an independent
    // second run makes this test fail by chance about once in 1,600.
    if (a.verdict === "red") a = await aa(10);
    console.log(`[loadgen→verdict] A/A: ${a.headline.estimateMs.toFixed(3)} ms, CI [${a.headline.ciMs.map((x) => x.toFixed(3)).join(", ")}]`);
    expect(a.verdict).not.toBe("red");
    expect(a.blocking).toBe(false);
  });
});
