// Main over time on a real local host: gates, promotions (advisory reds, a green) and a drift run
// against an ancestor a month old, with builds whose cost is known: the example service with a
// fixed busy wait per request (SPIN_US), so a build's step from its parent is the difference of
// their waits, to the microsecond (a sleep would end on the timer's next tick). The host's clock moves by PERF_GATE_CLOCK_OFFSET (the month passes; nothing measured is
// faked). The history holds each event; the monthly budget blocks the red that crosses it and a
// green pays back; the drift run's interval lies within a quarter step of the known shift; perf-gate history draws it.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { compounded } from "../../src/analysis/main-history";
import { digestOf } from "../../src/cli/run";
import { parseHistory } from "../../src/contract/history";
import { buildServiceBinaries } from "../support/bench-host";
import { perfGate as cliRun } from "../support/cli";
import { buildHostBinaries } from "../support/loadgen";
import { LocalGate } from "../support/local-gate";
import { machineTooBusy, skipTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

/** Each build spins this many µs per request beyond the service's hashing: a step of 0.2 ms is about 25% of main's level. */
const DELAYS = { A: 500, B: 700, C: 900, D: 500, E: 700 } as const;
type Build = keyof typeof DELAYS;
const LIMIT_PERCENT = 40;
/** The step between consecutive builds, in ms. */
const STEP_MS = 0.2;

let dir: string;
let root: string;
let local: LocalGate;
const builds = {} as Record<Build, string>;
let config: string;

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  dir = scratchDir("history-e2e");
  chmodSync(dir, 0o755);
  root = join(dir, "host");
  for (const [name, delay] of Object.entries(DELAYS) as [Build, number][]) {
    const release = join(dir, `build-${name}`);
    mkdirSync(join(release, "bin"), { recursive: true });
    copyFileSync(join(bin, "service-fast"), join(release, "bin/service-bin"));
    chmodSync(join(release, "bin/service-bin"), 0o755);
    // The build's own code path: a fixed wait per request, its known cost.
    writeFileSync(join(release, "bin/service"), `#!/bin/sh\nexec env SPIN_US=${delay} ./bin/service-bin\n`, {
      mode: 0o755,
    });
    writeFileSync(join(release, "VERSION"), `${name}\n`);
    builds[name] = release;
  }
  config = join(dir, "perf-gate.yml");
  // p50 at 300 req/s, 20 pairs of 0.5 s (the pooled estimator), no extensions: the mechanics of
  // the history and the budget are this test's subject, and the median is steady on a busy
  // machine. The block threshold, 1% of 40 ms, is 0.4 ms: a 0.2 ms step is an advisory red.
  writeFileSync(
    config,
    `service:\n  command: ["./bin/service"]\n  health_timeout_seconds: 10\nslo: {percentile: 50, budget_ms: 40}\nblock_threshold_percent: 1\nbudget: {percent_per_30_days: ${LIMIT_PERCENT}}\nslices: {seconds: 0.5, pairs: 20, max_extensions: 0}\nwarmup_seconds: 2\nworkloads:\n  - name: work\n    rates: [300]\n    connections: 8\n    requests: [{path: "/work?key={{rand 1000}}"}]\n`,
  );
  local = await LocalGate.onFreePorts(dir);
});

afterAll(() => {
  if (dir) local.stop(root);
});

interface Summary {
  verdict: string;
  blocking: boolean;
  blocked_by: string[];
  estimate_ms: number;
  ci_ms?: [number, number];
  comparisons: {
    budget: { main_percent: number; change_percent: number; limit_percent: number; exceeded: boolean } | null;
  }[];
  drift: {
    skipped: string | null;
    runs: {
      estimate_ms: number;
      ci_ms: [number, number];
      ancestor_sha: string;
      steps: number;
      steps_percent: number;
      percent: number;
    }[];
  } | null;
}

/**
 * perf-gate run on the local host `days` after the first promotion, as --json summarises it. A
 * run the machine was too busy to measure skips the test (the shared rule): every later step
 * stands on this one's verdict.
 */
async function run(
  ctx: TestContext,
  days: number,
  ...args: string[]
): Promise<{ code: number; summary: Summary | null; stderr: string }> {
  const r = await cliRun(
    [
      ...local.argv(root).slice(1),
      "--config",
      config,
      "--json",
      "--out",
      join(dir, `out-${days}`),
      "--max-foreign-cores",
      "64",
      "--settle-seconds",
      "1",
      "--keep-host",
      ...args,
    ],
    {
      cwd: dir,
      timeout: 300_000,
      env: { ...process.env, PERF_GATE_CLOCK_OFFSET: `${days * 24}h` },
    },
  );
  const busy = machineTooBusy(r);
  if (busy) skipTooBusy(ctx, `day ${days}: ${busy}`);
  let summary: Summary | null = null;
  try {
    summary = JSON.parse(r.stdout) as Summary;
  } catch {}
  // The premise: the machine resolves a 0.2 ms step. An interval wider than half of it cannot
  // tell a step from none, whatever it is labelled.
  const half = summary?.ci_ms && args.includes("--challenger") ? (summary.ci_ms[1] - summary.ci_ms[0]) / 2 : 0;
  if (half > STEP_MS / 2)
    skipTooBusy(
      ctx,
      `day ${days}: the interval is ±${half.toFixed(3)} ms, wider than half the ${STEP_MS} ms step each build takes`,
    );
  const budget = summary?.comparisons[0]?.budget;
  if (summary && budget)
    console.log(
      `[history] day ${days}: ${summary.verdict}${summary.blocking ? ` blocking (${summary.blocked_by.join(", ")})` : ""} ${summary.estimate_ms.toFixed(3)} ms [${summary.ci_ms?.map((x) => x.toFixed(3)).join(", ")}]; main ${budget.main_percent.toFixed(2)}%, this change ${budget.change_percent.toFixed(2)}%`,
    );
  return { code: r.code, summary, stderr: r.stderr };
}

/** A build's path, as perf-gate run takes it, and its SHA, as the host names it. */
const digest = (b: Build) => builds[b];
const sha = (b: Build) => digestOf(builds[b]);

describe("the history on a local host", () => {
  it("holds every gate, promotion and drift run; the budget blocks the red that crosses it; the drift interval finds the known shift", async (ctx) => {
    // Day 0: A becomes the champion; B (+0.2 ms, about +25% of main's level) is an advisory red, within the budget.
    const b = await run(ctx, 0, "--champion", digest("A"), "--challenger", digest("B"));
    expect(b.code, b.stderr).toBe(0);
    expect(b.summary).toMatchObject({ verdict: "red", blocking: false });
    const bBudget = b.summary!.comparisons[0]!.budget!;
    expect(bBudget).toMatchObject({ main_percent: 0, limit_percent: LIMIT_PERCENT, exceeded: false });
    expect(bBudget.change_percent).toBeGreaterThan(3);

    // Day 2: B is merged (its gate is the step). C, another +0.2 ms, would take main past 40%: it blocks, for the budget alone.
    const c = await run(ctx, 2, "--champion", digest("B"), "--challenger", digest("C"));
    expect(c.code, c.stderr).toBe(1);
    expect(c.summary).toMatchObject({ verdict: "red", blocking: true, blocked_by: ["budget"] });
    const cBudget = c.summary!.comparisons[0]!.budget!;
    expect(cBudget.main_percent).toBeCloseTo(bBudget.change_percent, 6);
    expect(compounded([cBudget.main_percent, cBudget.change_percent])).toBeGreaterThan(LIMIT_PERCENT);

    // Day 4: D (back to A's wait) is green against B; merged, it pays back, and E's +0.2 ms passes where C's did not.
    const d = await run(ctx, 4, "--champion", digest("B"), "--challenger", digest("D"));
    expect(d.summary).toMatchObject({ verdict: "green", blocking: false });
    const e = await run(ctx, 6, "--champion", digest("D"), "--challenger", digest("E"));
    expect(e.code, e.stderr).toBe(0);
    expect(e.summary).toMatchObject({ verdict: "red", blocking: false });
    expect(e.summary!.comparisons[0]!.budget!.main_percent).toBeLessThan(cBudget.main_percent);

    // Day 40: E is merged; a month after D, the calibration measures E against D: +0.2 ms by construction.
    const aa = await run(ctx, 40, "--champion", digest("E"), "--aa");
    const drift = aa.summary?.drift;
    if (!drift || drift.runs.length === 0)
      return skipTooBusy(ctx, `the drift run could not measure: ${drift?.skipped ?? aa.stderr}`);
    const [measured] = drift.runs;
    const driftHalf = (measured!.ci_ms[1] - measured!.ci_ms[0]) / 2;
    if (driftHalf > STEP_MS / 2)
      return skipTooBusy(
        ctx,
        `the drift run's interval is ±${driftHalf.toFixed(3)} ms, wider than half the ${STEP_MS} ms shift`,
      );
    expect(measured!.ancestor_sha).toBe(sha("D"));
    // The known shift lies within a quarter step of the interval: a 95% interval misses its truth
    // one run in twenty by design (its coverage is test/analysis/estimator-coverage's subject), and
    // a quarter step still tells E against D (one step) from no step or two, with the interval at
    // most a step wide (checked above).
    const shiftMs = (DELAYS.E - DELAYS.D) / 1000;
    expect(measured!.ci_ms[0]).toBeLessThanOrEqual(shiftMs + STEP_MS / 4);
    expect(measured!.ci_ms[1]).toBeGreaterThanOrEqual(shiftMs - STEP_MS / 4);
    expect(measured!.steps).toBe(1); // E's promotion, whose gate measured the same +0.2 ms
    console.log(
      `[history] drift of E against D: ${measured!.estimate_ms.toFixed(3)} ms [${measured!.ci_ms.map((x) => x.toFixed(3)).join(", ")}] (known shift +${shiftMs} ms); steps between: ${measured!.steps_percent.toFixed(2)}%, measured ${measured!.percent.toFixed(2)}%`,
    );

    // The history holds each: five gates, the promotions of A, B, D and E with their steps, the calibration and the drift run.
    const page = join(dir, "history.html");
    const json = join(dir, "history.json");
    const h = await cliRun(["history", ...local.argv(root).slice(2), "--out", page, "--json", json], {
      cwd: dir,
      env: { ...process.env, PERF_GATE_CLOCK_OFFSET: "960h" },
    });
    expect(h.code, h.stderr).toBe(0);
    const history = parseHistory(json, JSON.parse(readFileSync(json, "utf8")));
    const kinds = history.entries.map((x) => x.kind);
    expect(kinds.filter((k) => k === "gate")).toHaveLength(4);
    const promotions = history.entries.filter((x) => x.kind === "promotion").map((x) => x.change!);
    expect(promotions.map((p) => p.sha)).toEqual([sha("A"), sha("B"), sha("D"), sha("E")]);
    expect(promotions[0]!.step).toBeUndefined();
    expect(promotions.slice(1).map((p) => p.step!.gate.challenger_sha)).toEqual([sha("B"), sha("D"), sha("E")]);
    expect(kinds).toContain("drift");
    expect(history.ancestors.map((a) => a.sha)).toContain(sha("D"));
    expect(readFileSync(page, "utf8")).toContain('id="promotions"');
  });
});
