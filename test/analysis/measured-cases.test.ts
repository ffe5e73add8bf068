// A verdict is tied to what was measured: an arm that did not serve, foreign load the host saw,
// and a run that could not measure still saying what it measured. On the real A/A recording
// of testdata/ (the example service on this VM), perturbed as each case documents.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { identityDifferences } from "../../src/analysis/identity";
import { ChampionFailedError, CouldNotMeasureError, GeneratorDisturbedError } from "../../src/analysis/unmeasured";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { parseConfig } from "../../src/config/gate-config";
import { type HostResult, type LoadgenResult, parseResult } from "../../src/contract/result";
import { decide } from "../../src/experiment/decide";
import { comparisonJson } from "../../src/report/json";

const NAME = "aa-busy-vm.json";
const recorded = (): LoadgenResult =>
  parseResult(NAME, JSON.parse(readFileSync(join(import.meta.dirname, "testdata", NAME), "utf8")));
const run = (result: LoadgenResult) => analyze([{ name: NAME, result }], defaultSettings);

/** The recording without the pairs the disturbance rule drops: every pair kept. */
function calm(): LoadgenResult {
  const r = recorded();
  const dropped = new Set(run(r).headline.droppedPairs.map((d) => d.pair));
  return { ...r, slices: r.slices.filter((s) => !dropped.has(s.pair)) };
}

const config = parseConfig(
  "service: {command: [./bin/service]}\nslo: {percentile: 99, budget_ms: 200}\nworkloads: [{name: work, rates: [500], requests: [{path: /work}]}]\n",
  "perf-gate.yml",
);

describe("both arms must have served", () => {
  it("a champion failing most calls against a healthy challenger is could not measure naming the champion, never a latency label", () => {
    const r = calm();
    for (const s of r.slices.filter((x) => x.arm === "champion")) s.errors.grpc = { unimplemented: s.completed };
    expect(() => run(r)).toThrow(ChampionFailedError);
    expect(() => run(r)).toThrow(
      /^could not measure: the champion failed (\d+) of \1 requests of workload work @ 500 req\/s \(grpc unimplemented \1\), the challenger 0 of \d+: the champion did not serve this workload/,
    );
    // A champion failing under half its calls still has a baseline: a verdict.
    for (const s of r.slices.filter((x) => x.arm === "champion"))
      s.errors.grpc = { unimplemented: Math.floor(0.4 * s.completed) };
    expect(run(r).verdict).toBeDefined();
  });

  it("the mirror case, a challenger failing every call, stays red, blocking (errors)", () => {
    const r = calm();
    for (const s of r.slices.filter((x) => x.arm === "challenger")) s.errors.grpc = { unimplemented: s.completed };
    const a = run(r);
    expect([a.verdict, a.blocking, a.headline.blockedBy]).toEqual(["red", true, ["errors"]]);
  });
});

describe("foreign load", () => {
  const foreign = (r: LoadgenResult, pairs: number[]) => {
    for (const s of r.slices) {
      s.foreign_cpu_cores = pairs.includes(s.pair) ? 1.02 : 0.03;
      if (pairs.includes(s.pair))
        s.host_disturbance =
          "foreign load: 1.02 CPU cores busy with work other than this run's arms and load generator, over --max-foreign-cores 0.25";
    }
  };

  it("pairs with foreign load past the host's limit are dropped and named, the rest judged", () => {
    const r = calm();
    const pairs = [...new Set(r.slices.map((s) => s.pair))];
    foreign(r, [pairs[1]!, pairs[2]!]);
    const a = run(r);
    expect(a.headline.pairs).toBe(pairs.length - 2);
    expect(a.headline.droppedPairs.map((d) => d.pair)).toEqual([pairs[1], pairs[2]]);
    expect(a.headline.droppedPairs[0]!.reason).toMatch(
      /^champion slice \d+: the host was disturbed \(foreign load: 1\.02 CPU cores/,
    );
    const flag = a.headline.flags.find((f) => f.code === "host_disturbed");
    expect(flag?.message).toMatch(
      /^2 pairs dropped because other work on the host took CPU while they were measured \(foreign load\): aa-busy-vm\.json pair \d+: champion slice \d+ \(1\.02 cores\), challenger slice \d+ \(1\.02 cores\)/,
    );
    expect(a.runs[0]!.disturbed).toBe(2);
    expect(comparisonJson(a.headline).dropped_pairs[0]!.host_disturbances).toHaveLength(2);
  });

  it("foreign load in most pairs is could not measure, saying the host was disturbed", () => {
    const r = calm();
    const pairs = [...new Set(r.slices.map((s) => s.pair))];
    foreign(r, pairs.slice(0, Math.floor(pairs.length / 2) + 1));
    expect(() => run(r)).toThrow(GeneratorDisturbedError);
    expect(() => run(r)).toThrow(
      /^could not measure: the host was disturbed in \d+ of \d+ pairs of work@500 \(more than half\): other work on the host took CPU in \d+; another job is running on the host/,
    );
  });
});

describe("a run that could not measure still reports", () => {
  it("the report says what was measured, which pairs were dropped and why, and each arm's log tail", () => {
    const r = calm() as HostResult;
    for (const s of r.slices.filter((x) => x.arm === "champion")) s.errors["5xx"] = s.completed;
    const started = {
      sha: "a".repeat(40),
      ports: { PORT: 8001 },
      state_dir: "/s",
      state: "fresh" as const,
      started: r.started,
      healthy_seconds: 0.1,
    };
    r.arms = {
      champion: {
        ...started,
        log_tail: "panic: dial unix /var/run/nutcracker/ratelimit.sock",
        log_cut_bytes: 48_000_000,
      },
      challenger: { ...started, log_tail: "service listening on 127.0.0.1:8002" },
    };
    let error: unknown;
    try {
      decide([{ name: "run-1", result: r }], config, { seed: 1 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CouldNotMeasureError);
    const explained = (error as CouldNotMeasureError).explained!;
    expect(explained.markdown).toMatch(/^### ⚠️ perf-gate could not measure\n\ncould not measure: the champion failed/);
    expect(explained.markdown).toMatch(/\| run-1 \| work \| 500 \| \d+ \| 0 \| \d+ of \d+ \(5xx \d+\) \| 0 of \d+ \|/);
    expect(explained.markdown).toContain(
      "<details><summary>champion's log tail (run-1), 48,000,000 bytes cut from its middle</summary>",
    );
    expect(explained.markdown).toContain("panic: dial unix /var/run/nutcracker/ratelimit.sock");
    expect(explained.json).toMatchObject({
      verdict: "could_not_measure",
      runs: [{ name: "run-1", arms: { champion: { log_cut_bytes: 48_000_000 } } }],
    });
    expect(explained.results).toHaveLength(1);
  });
});

describe("a run's identity", () => {
  const withIdentity = (over: Partial<NonNullable<HostResult["identity"]>> = {}) => {
    const id = {
      digest: "d1",
      champion: { sha: "a".repeat(40), build: "sha256:1", service: "s1" },
      challenger: { sha: "b".repeat(40), build: "sha256:2", service: "s1" },
      placement: "none",
      generator: "g1",
      ...over,
    };
    return { ...recorded(), identity: id } as HostResult;
  };

  it("runs of one identity pool; a changed spec, build, placement or generator setting is named", () => {
    expect(identityDifferences(withIdentity(), withIdentity())).toEqual([]);
    expect(
      identityDifferences(
        withIdentity(),
        withIdentity({ digest: "d2", champion: { sha: "a".repeat(40), build: "sha256:1", service: "s2" } }),
      ),
    ).toEqual(["the champion's service spec"]);
    expect(
      identityDifferences(
        withIdentity(),
        withIdentity({
          digest: "d3",
          challenger: { sha: "b".repeat(40), build: "sha256:9", service: "s1" },
          placement: "cpuset",
        }),
      ),
    ).toEqual(["the challenger's build", "the CPU placement"]);
    expect(identityDifferences(withIdentity(), recorded())).toEqual(["its identity (a host that did not record one)"]);
  });

  it("the verdict engine refuses to pool results of two identities, naming what differs", () => {
    const other = withIdentity({ digest: "d2", placement: "cpuset: load generator on CPUs 0, arms on CPUs 1" });
    expect(() =>
      analyze(
        [
          { name: "a.json", result: withIdentity() },
          { name: "b.json", result: withIdentity() },
        ],
        defaultSettings,
      ),
    ).not.toThrow();
    expect(() =>
      analyze(
        [
          { name: "a.json", result: withIdentity() },
          { name: "b.json", result: other },
        ],
        defaultSettings,
      ),
    ).toThrow(
      "work@500: a.json and b.json ran another way (the CPU placement) and cannot be pooled; analyse them separately with --each",
    );
  });
});
