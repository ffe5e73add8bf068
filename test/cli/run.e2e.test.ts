// perf-gate run --local from the bundle: a real perf-host on this machine, no SSH. Its failures
// exit 2 with a one-line reason.
import { execFile, spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unclear } from "../../src/analysis/extension";
import { nominalAlphas } from "../../src/analysis/sequential";
import { buildServiceBinaries } from "../support/bench-host";
import { cli } from "../support/cli";
import { buildHostBinaries } from "../support/loadgen";
import { LocalGate, perfHost } from "../support/local-gate";
import { skipIfMachineTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

let dir: string;
let champion: string;
let slow: string;
let local: LocalGate;

const config = ({
  extra = "",
  command = '["./bin/service"]',
  slices = "{seconds: 0.5, pairs: 4}",
  percentile = 90,
} = {}) => {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(
    path,
    `service:\n  command: ${command}\n  health_timeout_seconds: 3\nslo: {percentile: ${percentile}, budget_ms: 50}\nslices: ${slices}\nwarmup_seconds: 0\nworkloads:\n  - name: w\n    rates: [100]\n    requests: [{path: /work}]\n${extra}`,
  );
  return path;
};

// What other work on the machine does to a run is test/cli/measured.e2e.test.ts's subject, not
// these tests': the host's foreign-load limit is raised for them, as before for the load average.
const perfGate = (root: string, ...args: string[]) =>
  local.run(root, "--max-foreign-cores", "64", "--settle-seconds", "1", ...args);

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  dir = scratchDir("run");
  chmodSync(dir, 0o755);
  champion = join(dir, "champion");
  mkdirSync(join(champion, "bin"), { recursive: true });
  copyFileSync(join(bin, "service-fast"), join(champion, "bin/service"));
  chmodSync(join(champion, "bin/service"), 0o755);
  slow = join(dir, "slow");
  mkdirSync(join(slow, "bin"), { recursive: true });
  copyFileSync(join(bin, "service-slow"), join(slow, "bin/service"));
  chmodSync(join(slow, "bin/service"), 0o755);
  local = await LocalGate.onFreePorts(dir);
});

const supervised = (root: string) =>
  JSON.parse(spawnSync(perfHost, ["status", ...local.hostFlags(root)], { encoding: "utf8" }).stdout)
    .champion_supervised as boolean;
const championAnswers = async () =>
  fetch(`http://127.0.0.1:${local.ports[0]}/health`).then(
    (r) => r.ok,
    () => false,
  );

// No supervisor may outlive the tests: later ones count the machine's services.
afterAll(() => {
  for (const root of ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11", "h12"])
    if (dir) local.stop(join(dir, root));
});

describe("perf-gate run --local", () => {
  it("a bad config exits 2 naming the key and its line", async () => {
    const r = await perfGate(
      join(dir, "h1"),
      "--config",
      config({ extra: "extra_key: 1\n" }),
      "--challenger",
      champion,
    );
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^perf-gate run: \S+config-\w+\.yml:11: extra_key: unknown key$/m);
  });

  it("--loadgen-cpus and --arm-cpus place the generator and the builds as a host's flags do; a list not of CPUs is refused naming the flag", async (ctx) => {
    for (const [flag, list] of [
      ["--loadgen-cpus", "0;rm"],
      ["--arm-cpus", "3-1"],
      ["--arm-cpus", "1024"],
      ["--loadgen-cpus", ""],
    ] as const) {
      const bad = await perfGate(join(dir, "h8"), "--config", config(), "--challenger", champion, flag, list);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(
        `${flag}: a CPU list such as 0, 0-1 or 2-5,7 (CPUs 0 to 1023, each range low to high), got "${list}"`,
      );
    }
    if (availableParallelism() < 2) ctx.skip(); // two lists that do not overlap need two CPUs
    const out = join(dir, "out-placed");
    const r = await perfGate(
      join(dir, "h8"),
      "--config",
      config(),
      "--champion",
      champion,
      "--challenger",
      champion,
      "--out",
      out,
      "--loadgen-cpus",
      "0",
      "--arm-cpus",
      "1",
    );
    local.stop(join(dir, "h8"));
    expect(r.code, r.stderr).toBeLessThan(2);
    const [result] = JSON.parse(readFileSync(join(out, "result.json"), "utf8")) as {
      isolation: { placement: unknown };
    }[];
    expect(result!.isolation.placement).toMatchObject({ loadgen_cpus: "0", arm_cpus: "1" });
    expect(["cpuset", "sched_setaffinity"]).toContain((result!.isolation.placement as { method: string }).method);
  });

  it("a service that never answers its health check exits 2 with a one-line reason", async () => {
    const root = join(dir, "h2");
    const r = await perfGate(
      root,
      "--config",
      config({ command: '["sh", "-c", "sleep 60"]' }),
      "--champion",
      champion,
      "--challenger",
      champion,
    );
    local.stop(root);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^perf-gate run: promote [0-9a-f]{40}: promotion refused \(no champion yet\): candidate champion [0-9a-f]{40} not healthy after 3s at http:\/\/127\.0\.0\.1:\d+\/health/,
    );
  });

  it("a challenger that crashes mid-run exits 2 as its failure, and report.md says so with its log's tail", async () => {
    const root = join(dir, "h12");
    const crashing = join(dir, "crashing");
    mkdirSync(join(crashing, "bin"), { recursive: true });
    copyFileSync(join(champion, "bin/service"), join(crashing, "bin/service-bin"));
    // Healthy, then gone: the run's slices outlast it.
    writeFileSync(
      join(crashing, "bin/service"),
      "#!/bin/sh\n./bin/service-bin & sleep 2; echo 'about to fall over' >&2; kill $!; exit 3\n",
      { mode: 0o755 },
    );
    const out = join(dir, "out-crash");
    const r = await perfGate(
      root,
      "--config",
      config({ slices: "{seconds: 1, pairs: 6}" }),
      "--champion",
      champion,
      "--challenger",
      crashing,
      "--out",
      out,
    );
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^perf-gate run: w @ 100 req\/s: challenger_crashed: /);
    const report = readFileSync(join(out, "report.md"), "utf8");
    expect(report).toMatch(
      /^\*\*perf-gate: the challenger failed \(challenger crashed\)\.\*\* This is the challenger's build \(--challenger\) failing on the benchmark host, not a performance verdict\./,
    );
    expect(report).toContain("about to fall over");
  });

  it("a busy host exits 2 naming the run that holds it", async () => {
    const root = join(dir, "h3");
    const cfg = config();
    // A first run installs the champion (an A/A run would refuse to record a floor whenever the
    // other test files running beside this one raise the load average past the host's limit).
    const first = await perfGate(root, "--config", cfg, "--champion", champion, "--challenger", champion);
    expect(first.code, first.stderr).toBeLessThan(2);
    // Hold the host with a long A/A run started directly through perf-host.
    const plan = JSON.stringify({
      service: { command: ["./bin/service"] },
      loadgen: { workload: "w", rate: 50, slice_seconds: 2, pairs: 3, requests: [{ path: "/work" }] },
    });
    await new Promise<void>((resolve) => {
      const p = spawn(perfHost, ["aa", ...local.hostFlags(root), "hold-1"]);
      p.stdin.end(plan);
      p.on("close", () => resolve());
    });
    const r = await perfGate(root, "--config", cfg, "--challenger", champion);
    // The held run's executor would start a new champion supervisor if it outlived the old one.
    spawnSync(perfHost, ["abort", ...local.hostFlags(root), "hold-1"]);
    local.stop(root);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^perf-gate run: run run-\w+-0: host busy: aa hold-1 since /);
  });

  it("--aa measures an interval that excludes 0 again before it records a biased host", async (ctx) => {
    const root = join(dir, "h4");
    // The same build, but ~2 ms of extra hashing on the challenger port: a host whose ports differ.
    // Judged at p50: at 50 requests a slice, p90 turns on a hiccup of 5 requests (seen once).
    const lopsided = join(dir, "lopsided");
    mkdirSync(join(lopsided, "bin"), { recursive: true });
    copyFileSync(join(champion, "bin/service"), join(lopsided, "bin/service"));
    writeFileSync(
      join(lopsided, "start.sh"),
      `#!/bin/sh\n[ "$PORT" = "${local.ports[1]}" ] && export HASH_ROUNDS=20000\nexec ./bin/service\n`,
      { mode: 0o755 },
    );
    chmodSync(join(lopsided, "bin/service"), 0o755);
    const r = await perfGate(
      root,
      "--config",
      config({ command: '["./start.sh"]', slices: "{seconds: 0.5, pairs: 5}", percentile: 50 }),
      "--champion",
      lopsided,
      "--aa",
    );
    local.stop(root);
    console.log(
      r.stdout
        .split("\n")
        .filter((l) => /^(A\/A|GREY|RED|GREEN)/.test(l))
        .join("\n"),
    );
    // A/A runs the generator fell behind in record nothing
    // (docs/design/0011-instrument-vouches-for-itself.md): the premise is gone.
    skipIfMachineTooBusy(ctx, r);
    expect(r.code, r.stderr).toBe(1); // a confirmed bias
    expect(r.stdout).toContain("A/A confirmation (the interval excluded 0): w @ 100 req/s, 5 pairs of 0.5 s slices");
    expect(r.stdout).toMatch(
      /^A\/A interval for w@100 at p50 excludes 0 in two runs \(\[\+[\d.]+, \+[\d.]+\] ms and \[\+[\d.]+, \+[\d.]+\] ms\): .*\(biased host\)/m,
    );
  });

  it("--json prints one summary; a rerun of the same build pools the first run, as the action does; analyze reads run's result.json", async () => {
    const root = join(dir, "h5");
    // No extensions: this is about a rerun by hand pooling the first gate (the next test extends).
    const cfg = config({ slices: "{seconds: 0.5, pairs: 4, max_extensions: 0}" });
    const first = await perfGate(
      root,
      "--config",
      cfg,
      "--champion",
      champion,
      "--challenger",
      slow,
      "--json",
      "--out",
      join(dir, "out1"),
    );
    expect(first.code, first.stderr).toBeLessThan(2);
    const one = JSON.parse(first.stdout);
    // 4 measured; a pair the generator fell behind in is dropped, at most half.
    expect(one).toMatchObject({
      pooled: [],
      headline: "w@100",
      percentile: 90,
      exit_code: first.code,
      calibrations: null,
    });
    expect(one.pairs).toBeGreaterThanOrEqual(2);
    expect(["green", "red", "grey"]).toContain(one.verdict);
    for (const key of ["blocking", "estimate_ms", "ci_ms", "floor_ms", "flags", "comparisons"])
      expect(one).toHaveProperty(key);
    expect(one.report.markdown).toBe(join(dir, "out1", "report.md"));
    const firstRun = one.comparisons[0].runs[0] as string;
    expect(first.stderr).toContain("champion vs challenger: w @ 100 req/s, 4 pairs of 0.5 s slices"); // progress is not on stdout

    const second = await perfGate(root, "--config", cfg, "--challenger", slow, "--json", "--out", join(dir, "out2"));
    local.stop(root);
    const two = JSON.parse(second.stdout);
    console.log(
      `[run --json] first: ${one.verdict} ${one.estimate_ms.toFixed(3)} ms over ${one.pairs} pairs; pooled: ${two.verdict} ${two.estimate_ms.toFixed(3)} ms over ${two.pairs} pairs`,
    );
    expect(two.pooled).toEqual([firstRun]);
    expect(two.pairs).toBeGreaterThan(one.pairs); // the rerun's pairs join the first run's
    expect(two.comparisons[0].runs).toEqual([firstRun, expect.stringMatching(/^run-\w+-0$/)]);
    expect(two.confidence).toBeCloseTo(1 - nominalAlphas(0.05, [one.pairs, two.pairs])[1]!, 12); // the second look at one build
    expect(readFileSync(two.report.markdown, "utf8")).toContain(`pooled with 1 earlier run of`);

    // analyze reads the result.json run wrote (a list: the pooled run, then the new one) to the same numbers.
    const analyzed = await new Promise<string>((resolve) =>
      execFile(
        process.execPath,
        [cli, "analyze", "--json", "--percentile", "90", "--slo-ms", "50", two.report.result],
        (_e, out) => resolve(out),
      ),
    );
    expect(JSON.parse(analyzed)).toMatchObject({
      verdict: two.verdict,
      pairs: two.pairs,
      estimate_ms: two.estimate_ms,
      ci_ms: two.ci_ms,
    });
  });

  it("an unclear gate extends itself: each extension a further run of the same workload and rate, each run a look, every look but the last unclear", async () => {
    const root = join(dir, "h9");
    // The same build on both arms against a 0.2 ms threshold (0.4% of 50 ms): a 4-pair interval
    // here was ±0.06-0.33 ms at p90, so the first look often holds the threshold and three
    // looks' pairs would settle it; whichever way this run goes, the rule must have been followed.
    const cfg = config({ extra: "block_threshold_percent: 0.4\n" });
    const out = join(dir, "out-extending");
    const r = await perfGate(
      root,
      "--config",
      cfg,
      "--champion",
      champion,
      "--challenger",
      champion,
      "--json",
      "--out",
      out,
    );
    local.stop(root);
    expect(r.code, r.stderr).toBeLessThan(2);
    const analysis = JSON.parse(readFileSync(join(out, "analysis.json"), "utf8"));
    const c = analysis.comparisons[0];
    const looks = c.look_history as {
      run: string;
      pairs: number;
      estimate_ms: number;
      ci_ms: [number, number];
      confidence: number;
    }[];
    console.log(
      `[run extending] ${looks.map((l) => `${l.run}: ${l.pairs} pairs, ${l.estimate_ms.toFixed(3)} [${l.ci_ms.map((x) => x.toFixed(3)).join(", ")}] ms at ${(100 * l.confidence).toFixed(2)}%`).join("; ")} -> ${c.verdict}`,
    );
    expect(looks.length).toBeGreaterThanOrEqual(1);
    expect(looks.length).toBeLessThanOrEqual(3); // slices.max_extensions defaults to 2
    expect(c.runs).toHaveLength(looks.length);
    looks.slice(1).forEach((l, k) => {
      expect(l.run).toMatch(new RegExp(`^run-\\w+-x${k + 1}c0-0$`));
    });
    // Each look at its group-sequential level; a look was followed by another only while unclear.
    const levels = nominalAlphas(
      0.05,
      looks.map((l) => l.pairs),
    );
    looks.forEach((l, i) => {
      expect(l.confidence).toBeCloseTo(1 - levels[i]!, 12);
    });
    looks.slice(0, -1).forEach((l) => {
      expect(unclear(l.ci_ms, c.threshold_ms)).toBe(true);
    });
    const documents = JSON.parse(readFileSync(join(out, "result.json"), "utf8")) as {
      plan: { run_id: string; seed: number };
    }[];
    expect(documents.map((d) => d.plan.run_id)).toEqual(c.runs);
    expect(new Set(documents.map((d) => d.plan.seed)).size).toBe(documents.length); // each extension new requests
    expect(readFileSync(join(out, "report.md"), "utf8")).toMatch(
      looks.length > 1 ? /Looks at this build \(each run pooled in turn/ : /p90 interval: /,
    );
  });

  it("stops the champion it started when it ends, unless --keep-host; a supervisor it found running is left alone", async () => {
    const root = join(dir, "h6");
    const cfg = config();
    const first = await perfGate(root, "--config", cfg, "--champion", champion, "--challenger", slow);
    expect(first.code, first.stderr).toBeLessThan(2);
    expect(first.stdout).toMatch(
      /stopped the champion supervisor \(pid \d+\) and champion [0-9a-f]{40}; nothing of either arm runs/,
    );
    expect([supervised(root), await championAnswers()]).toEqual([false, false]);

    const kept = await perfGate(root, "--config", cfg, "--challenger", slow, "--keep-host");
    expect(kept.code, kept.stderr).toBeLessThan(2);
    expect([supervised(root), await championAnswers()]).toEqual([true, true]);
    // Found running: this run leaves it so.
    const again = await perfGate(root, "--config", cfg, "--challenger", champion);
    expect(again.code, again.stderr).toBeLessThan(2);
    expect([supervised(root), await championAnswers()]).toEqual([true, true]);
    const stopped = local.stop(root);
    expect(String(stopped.stdout)).toMatch(/^stopped the champion supervisor/);
    expect([supervised(root), await championAnswers()]).toEqual([false, false]);
  });

  it.each([
    ["Ctrl-C", "h7", "SIGINT"],
    ["the terminal closing", "h10", "SIGHUP"],
    ["its output closing (piped into head)", "h11", "EPIPE"],
  ] as const)("%s aborts the run in flight, stops what it started and exits 130", async (what, host, how) => {
    const root = join(dir, host);
    const cfg = config({ slices: "{seconds: 1, pairs: 20}" });
    const child = spawn(
      process.execPath,
      [...local.argv(root), "--config", cfg, "--champion", champion, "--challenger", slow],
      { cwd: dir },
    );
    let out = "";
    let err = "";
    let sent = false;
    child.stdout.on("data", (d) => {
      out += d;
      if (sent || !/slice 2\/40/.test(out)) return;
      sent = true;
      if (how === "EPIPE") child.stdout.destroy();
      else child.kill(how);
    });
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    const runId = /interrupted: run (\S+) was aborted/.exec(err)?.[1];
    console.log(`[${what}] exit ${code}: ${err.trim()}`);
    expect(code, out + err).toBe(130);
    expect(err.trim()).toBe(`perf-gate run: interrupted: run ${runId} was aborted`);
    const outcome = JSON.parse(readFileSync(join(root, "runs", runId!, "outcome.json"), "utf8"));
    expect(outcome.status).toBe("aborted");
    expect([supervised(root), await championAnswers()]).toEqual([false, false]);
  });
});
