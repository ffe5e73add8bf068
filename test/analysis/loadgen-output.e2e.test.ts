// The verdict engine on real output of the layer below: the load generator binary against the
// example service's two builds as real processes on loopback; the slow build does ~0.6 ms
// more hashing per request (benchmark-host/examples/service/work_slow.go). The verdict is
// taken at p90: with the generator and both services on two cores, a stable p99 needs longer
// slices than a unit test should take (the action's end-to-end test judges at p99).
//
// The instrument's health comes first (docs/design/0011-instrument-vouches-for-itself.md). On this
// 2-core VM a woken idle vCPU can wait 5-20 ms for the hypervisor (CPU steal: 596 of ~4,200 jiffies
// in one 19 s run); such periods stall the generator and both services at once and come and go over
// seconds. One run that fell into one read dispatch lag p99 6.2 ms (median slice) and paired
// differences of 5.6, 6.0, 0.8, 0.9, 0.8, 4.3 ms: +3.0 ms ± 2.6 ms, the grey CI once saw on main.
// Calm runs read lag p99 0.3 ms and ±0.06-0.13 ms. The disturbance rule drops such pairs, and a run
// where most were disturbed is "could not measure", not a verdict. A stall can also starve a
// service while the generator keeps its schedule: the rule keeps that pair, and it is noise no
// verdict can see through. Either way the test measures again (measure, below), and if the host is
// still stalling says so instead of asserting on a broken instrument.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { LAG_FLOOR_US, LAG_SHARE } from "../../src/analysis/health";
import { slicePercentileUs } from "../../src/analysis/statistic";
import { FailingWorkloadError, GeneratorDisturbedError } from "../../src/analysis/unmeasured";
import { type Analysis, analyze, defaultSettings, type GateSettings } from "../../src/analysis/verdict";
import { parseResult } from "../../src/contract/result";
import { markdownReport } from "../../src/report/markdown";
import { aaAllowingChance } from "../support/aa-by-chance";
import { buildServiceBinaries, freePorts, serveExample } from "../support/bench-host";
import { buildHostBinaries, runLoadgen } from "../support/loadgen";
import { untilQuiet } from "../support/machine-too-busy";

const services: ChildProcess[] = [];
let fastPort = 0;
let slowPort = 0;

async function serve(binary: string, port: number): Promise<void> {
  services.push(await serveExample(binary, port));
}

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  [fastPort = 0, slowPort = 0] = await freePorts(2);
  await Promise.all([serve(join(bin, "service-fast"), fastPort), serve(join(bin, "service-slow"), slowPort)]);
});
afterAll(() => {
  for (const p of services) p.kill();
});

const plan = (challengerPort: number, seed = 9) => ({
  targets: { champion: `http://127.0.0.1:${fastPort}`, challenger: `http://127.0.0.1:${challengerPort}` },
  workload: "work",
  rate: 300,
  slice_seconds: 1.5,
  pairs: 6,
  seed,
  warmup_seconds: 1,
  connections: 8,
  requests: [{ path: "/work?key={{rand 100}}" }],
});

const settings: GateSettings = { ...defaultSettings, percentile: 90, sloBudgetMs: 20 };

/**
 * Slices of the pairs a verdict kept where the host stalled what the test measures for longer
 * than the disturbance rule lets the generator fall behind, max(1 ms, 10% of the slice's latency
 * at the verdict's percentile):
 * - a service that stopped answering: requests queued for a free connection past it. The example
 *   builds answer in 0.1-1.5 ms on 8 connections at 300 req/s, so a connection is free within a
 *   millisecond unless the host starved the service; the generator, running meanwhile, keeps its
 *   schedule and the rule keeps the pair. One such run read connection waits p99 of 57 and 35 ms
 *   in kept slices and a grey 11.0 ms (95% CI [-16.8, +38.7]) for the 0.6 ms regression;
 * - the generator itself, at p99: the rule reads its lag at the verdict's p90 and keeps a pair
 *   stalled at p99, as it should, but the test's premise is a generator that kept its schedule.
 *   One run read lag p99 of 8-18 ms in six kept slices and a grey 1.5 ms (95% CI [-0.5, +3.5]).
 * Calm runs read both under 1 ms.
 */
function hostStalls(result: ReturnType<typeof parseResult>, a: Analysis, frozenSlice?: number): string[] {
  const dropped = new Set(a.headline.droppedPairs.map((d) => d.pair));
  return result.slices
    .filter((s) => !dropped.has(s.pair) && s.index !== frozenSlice)
    .flatMap((s) => {
      const limitUs = Math.max(LAG_FLOOR_US, LAG_SHARE * slicePercentileUs(s, a.percentile));
      return s.connection_wait_us.p99 > limitUs || s.dispatch_lag_us.p99 > limitUs
        ? [
            `${s.arm} slice ${s.index}: connection wait p99 ${(s.connection_wait_us.p99 / 1000).toFixed(1)} ms, dispatch lag p99 ${(s.dispatch_lag_us.p99 / 1000).toFixed(1)} ms (limit ${(limitUs / 1000).toFixed(1)} ms)`,
          ]
        : [];
    });
}

/** Each slice's dispatch lag and connection wait p99, for the log. */
function lags(result: ReturnType<typeof parseResult>): string {
  const ms = (us: number) => (us / 1000).toFixed(1);
  return `dispatch lag/connection wait p99 per slice (ms): ${result.slices.map((s) => `${ms(s.dispatch_lag_us.p99)}/${ms(s.connection_wait_us.p99)}`).join(" ")}`;
}

/**
 * Runs the plan and analyses it. A test's premise is a working instrument on a host that runs
 * the services it measures; on a VM whose idle vCPUs halt, shared with other jobs, both fail in
 * spells of seconds. A run where the generator fell behind in most pairs ("could not measure"),
 * or where the host stalled the generator or starved a service in a pair the verdict kept (see
 * hostStalls), is measured again, at most twice, then skips naming the lags (the one
 * "machine too busy" rule): what failed is the machine, not the verdict.
 */
type Measured = { result: ReturnType<typeof parseResult>; analysis: Analysis };

async function measure(
  ctx: TestContext,
  name: string,
  p: object,
  o: { onStart?: (loadgen: ChildProcess) => void; frozenSlice?: number } = {},
): Promise<Measured> {
  return untilQuiet<Measured>(ctx, async (n) => {
    const result = parseResult(name, await runLoadgen(p, o.onStart));
    let problem: string;
    try {
      const analysis = analyze([{ name, result }], settings);
      // A slice frozen on purpose is the test's own, not the host's: kept, it fails the test.
      const stalled = hostStalls(result, analysis, o.frozenSlice);
      if (stalled.length === 0) return { value: { result, analysis } };
      problem = `the host stalled the generator or a service in a kept pair (${stalled.join("; ")}); the verdict it gave: ${analysis.verdict}, CI [${analysis.headline.ciMs.map((x) => x.toFixed(3)).join(", ")}] ms`;
    } catch (e) {
      if (!(e instanceof GeneratorDisturbedError)) throw e;
      problem = e.message;
    }
    console.log(`[loadgen→verdict] ${name} run ${n + 1}: ${problem.split("\n")[0]}`);
    return { busy: problem };
  });
}

describe("verdict on real load generator output", () => {
  it("the slow build is red and blocking, by about its extra service time", async (ctx) => {
    const { result, analysis: a } = await measure(ctx, "ab.json", plan(slowPort));
    const h = a.headline;
    // Ground truth from the same run: the median extra time the server spent per request.
    const svc = (arm: string) => result.slices.filter((s) => s.arm === arm).map((s) => s.service_time_us.p50);
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const extraMs = (median(svc("challenger")) - median(svc("champion"))) / 1000;
    console.log(
      `[loadgen→verdict] A/B: ${h.estimateMs.toFixed(3)} ms, CI [${h.ciMs.map((x) => x.toFixed(3)).join(", ")}] on ${h.pairs} pairs (${h.droppedPairs.length} dropped); extra service time p50 ${extraMs.toFixed(3)} ms; ${lags(result)}`,
    );
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true); // threshold 0.2 ms on a 20 ms budget
    expect(extraMs).toBeGreaterThan(0.2);
    // The extra work is a median, so it is the p50 estimate that must match it, within half.
    // (At p90 the slow build's tail is wider still: vegeta, measuring each build alone, put
    // them 0.7 ms apart at p50 and 1.2-1.4 ms at p90 on this 2-core machine. The net/http
    // generator before the event loops hid that under its own noise: its champion p90 read 1-4 ms.)
    const p50 = analyze([{ name: "ab.json", result }], { ...settings, percentile: 50 }).headline;
    console.log(
      `[loadgen→verdict] A/B at p50: ${p50.estimateMs.toFixed(3)} ms, CI [${p50.ciMs.map((x) => x.toFixed(3)).join(", ")}]`,
    );
    expect(Math.abs(p50.estimateMs - extraMs)).toBeLessThan(0.5 * extraMs + 0.1);
    expect(h.estimateMs).toBeGreaterThan(p50.estimateMs - 0.1);
    // Pairs the generator was disturbed in are dropped (named in the report), at most half.
    expect(h.pairs + h.droppedPairs.length).toBe(6);
    expect(h.pairs).toBeGreaterThanOrEqual(3);
    expect(h.flags.map((f) => f.code)).not.toContain("short_of_budget");
    expect(markdownReport(a)).toContain("### perf-gate: 🔴 red, blocking — challenger is ");
  });

  it("the same build on both arms is not red", async (ctx) => {
    const aa = async (seed?: number) => (await measure(ctx, "aa.json", plan(fastPort, seed))).analysis;
    const a = await aaAllowingChance(
      (attempt) => aa(attempt === 0 ? undefined : 10),
      (r) => r.verdict === "red",
    );
    console.log(
      `[loadgen→verdict] A/A: ${a.headline.estimateMs.toFixed(3)} ms, CI [${a.headline.ciMs.map((x) => x.toFixed(3)).join(", ")}]`,
    );
    expect(a.verdict).not.toBe("red");
    expect(a.blocking).toBe(false);
  });

  it("a workload of 404s on both arms is a configuration error that names it, not grey", async () => {
    const wrongPath = {
      ...plan(fastPort),
      slice_seconds: 0.5,
      pairs: 2,
      warmup_seconds: 0,
      requests: [{ path: "/no-such-path" }],
    };
    const result = parseResult("404.json", await runLoadgen(wrongPath));
    expect(result.slices.every((s) => s.errors["4xx"] === s.completed && s.completed > 0)).toBe(true);
    expect(() => analyze([{ name: "404.json", result }], settings)).toThrow(FailingWorkloadError);
    expect(() => analyze([{ name: "404.json", result }], settings)).toThrow(
      /workload work @ 300 req\/s: most requests failed on both arms \(champion 100% failed of \d+ \(4xx \d+\); challenger 100% failed/,
    );
  });

  it("a generator frozen for 300 ms in one slice leaves a real regression red: that pair is dropped and named", async (ctx) => {
    // Slice index 2 runs from 4.0 s to 5.5 s of the schedule (1 s warm-up, 1.5 s slices): freeze
    // the generator 4.6 s after it starts, for 300 ms, as a stall of the host would.
    const freeze = (loadgen: ChildProcess) => {
      setTimeout(() => {
        loadgen.kill("SIGSTOP");
        setTimeout(() => loadgen.kill("SIGCONT"), 300);
      }, 4600);
    };
    const { result, analysis: a } = await measure(ctx, "frozen.json", plan(slowPort), {
      onStart: freeze,
      frozenSlice: 2,
    });
    const frozen = result.slices.reduce((worst, s) => (s.dispatch_lag_us.p99 > worst.dispatch_lag_us.p99 ? s : worst));
    const alone = result.slices.filter((s) => s.pair === frozen.pair);
    const dFrozenMs =
      (alone.find((s) => s.arm === "challenger")!.latency_us.p90 -
        alone.find((s) => s.arm === "champion")!.latency_us.p90) /
      1000;
    const h = a.headline;
    console.log(
      `[loadgen→verdict] frozen: ${frozen.arm} slice ${frozen.index} dispatch lag p99 ${(frozen.dispatch_lag_us.p99 / 1000).toFixed(0)} ms, its pair's difference ${dFrozenMs.toFixed(2)} ms; verdict ${a.verdict} ${h.estimateMs.toFixed(3)} ms, CI [${h.ciMs.map((x) => x.toFixed(3)).join(", ")}] on ${h.pairs} pairs; ${lags(result)}`,
    );
    // The freeze, seen by the instrument: ~20% of the slice's requests left up to 300 ms late,
    // so its lag at the verdict's p90 is far past the 1 ms limit.
    expect(frozen.dispatch_lag_us.p99).toBeGreaterThan(150_000);
    expect(frozen.dispatch_lag_us.p90).toBeGreaterThan(50_000);
    expect(frozen.index).toBe(2);
    expect(h.droppedPairs.map((d) => d.pair)).toContain(frozen.pair);
    const flag = h.flags.find((f) => f.code === "generator_disturbed")!;
    expect(flag.message).toContain(
      `frozen.json pair ${frozen.pair}: ${frozen.arm} slice ${frozen.index} (dispatch lag p90 `,
    );
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true);
    expect(h.estimateMs).toBeLessThan(2); // the regression's ~0.6 ms, not the freeze
  });
});
