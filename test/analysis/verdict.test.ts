// The verdict rules (the README's verdict engine section), each on a dataset chosen to sit on one side of it.
import { describe, expect, it } from "vitest";
import { AnalysisInputError } from "../../src/analysis/input-error";
import { nominalAlphas } from "../../src/analysis/sequential";
import { pairedT } from "../../src/analysis/tests";
import { CouldNotMeasureError } from "../../src/analysis/unmeasured";
import { analyze, defaultSettings, type NamedResult } from "../../src/analysis/verdict";
import { parseResult } from "../../src/contract/result";
import { makeResult, pairsFromDiffs, type ResultSpec } from "./fixtures";
import ref from "./reference-values.json";

const named = (spec: ResultSpec, name = "r.json"): NamedResult => ({ name, result: makeResult(spec) });
const run = (d: number[], settings = {}, spec: Partial<ResultSpec> = {}) =>
  analyze([named({ pairs: pairsFromDiffs(d), ...spec })], { ...defaultSettings, ...settings });

describe("labels", () => {
  it("green when the whole interval is below 0", () => {
    const a = run(ref.datasets.karan_faster.d);
    expect(a.verdict).toBe("green");
    expect(a.blocking).toBe(false);
    expect(a.headline.estimateMs).toBeCloseTo(ref.datasets.karan_faster.mean, 3);
    // A first look spends half of α (src/analysis/sequential.ts): its interval is at 97.5%.
    expect(a.headline.confidence).toBeCloseTo(0.975, 12);
    expect(a.headline.ciMs[0]).toBeCloseTo(pairedT(ref.datasets.karan_faster.d, 0.975).ci.lo, 9);
  });

  it("red but advisory when the regression is under the block threshold", () => {
    const a = run(ref.datasets.small_regression.d); // ~0.32 ms on a 2 ms threshold
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(false);
  });

  it("red and blocking past the threshold, saying whether the whole interval is beyond it", () => {
    const decisive = run([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]);
    expect(decisive.blocking).toBe(true);
    expect(decisive.headline.blockingDecisive).toBe(true);
    const marginal = run([1.2, 3.1, 2.0, 2.9, 1.7, 2.6, 2.2, 3.3, 1.5, 2.8]);
    expect(marginal.verdict).toBe("red");
    expect(marginal.headline.estimateMs).toBeGreaterThan(2);
    expect(marginal.blocking).toBe(true);
    expect(marginal.headline.blockingDecisive).toBe(false);
  });

  it("grey equivalent when the interval lies within ± the threshold", () => {
    const a = run(ref.datasets.null_noise.d);
    expect([a.verdict, a.headline.greyKind]).toEqual(["grey", "equivalent"]);
  });

  it("grey inconclusive when the interval is wider than the threshold", () => {
    const a = run([3, -4, 5, -2, 1, -3, 4, -5, 2, 0.5]);
    expect([a.verdict, a.headline.greyKind]).toEqual(["grey", "inconclusive"]);
  });

  it("grey within floor when the interval excludes 0 but |estimate| is inside the A/A floor", () => {
    const a = run(ref.datasets.small_regression.d, { floorMs: 0.5 });
    expect([a.verdict, a.headline.greyKind, a.headline.latency, a.headline.floorMs]).toEqual([
      "grey",
      "within floor",
      "within floor",
      0.5,
    ]);
  });

  it("uses the per-comparison floor when given a map", () => {
    const a = run(ref.datasets.small_regression.d, { floorMs: { "default@1000": 0.05 } });
    expect(a.verdict).toBe("red");
    expect(a.headline.floorMs).toBe(0.05);
  });

  it("a biased host (an A/A interval excluding 0) widens that comparison's floor to the bias and says so on every verdict", () => {
    // small_regression: mean 0.323 ms; a bias of [0.12, 0.40] ms on these ports covers it.
    const biased = run(ref.datasets.small_regression.d, {
      floorMs: { "default@1000": 0.05 },
      hostBiasMs: { "default@1000": [0.12, 0.4], "other@5": [-0.3, -0.1] },
    });
    expect([biased.verdict, biased.headline.greyKind, biased.headline.floorMs]).toEqual(["grey", "within floor", 0.4]);
    expect(biased.headline.flags.map((f) => f.code)).toContain("host_biased");
    expect(biased.hostBias).toEqual([
      { key: "default@1000", ciMs: [0.12, 0.4] },
      { key: "other@5", ciMs: [-0.3, -0.1] },
    ]);
    // A bias on another workload leaves this comparison's verdict alone but is still reported.
    const elsewhere = run(ref.datasets.small_regression.d, { hostBiasMs: { "other@5": [-0.3, -0.1] } });
    expect(elsewhere.verdict).toBe("red");
    expect(elsewhere.headline.flags.map((f) => f.code)).not.toContain("host_biased");
    expect(elsewhere.hostBias).toHaveLength(1);
  });

  it("a larger SLO budget raises the block threshold", () => {
    const d = [2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7];
    expect(run(d, { sloBudgetMs: 500 }).blocking).toBe(false); // 5 ms threshold
    expect(run(d, { blockThresholdPercent: 0.5, sloBudgetMs: 200 }).headline.thresholdMs).toBe(1);
  });
});

describe("several comparisons", () => {
  it("Holm-Bonferroni across workloads and rates; red if any is red", () => {
    const a = analyze(
      [
        named({ pairs: pairsFromDiffs(ref.datasets.null_noise.d), rate: 500 }),
        named({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]), rate: 1000 }),
        named({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d), rate: 1500 }),
      ],
      defaultSettings,
    );
    expect(a.comparisons.map((c) => c.verdict)).toEqual(["grey", "red", "green"]);
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true);
    expect(a.headline.key).toBe("default@1000");
    const p = a.comparisons.map((c) => c.t.p);
    // Holm on three: the smallest p is tripled, and adjusted values are monotone.
    const sorted = [...p].sort((x, y) => x - y);
    const smallest = a.comparisons.find((c) => c.t.p === sorted[0])!;
    expect(smallest.t.holmP).toBeCloseTo(Math.min(1, 3 * sorted[0]!), 12);
  });

  it("a result significant alone can be grey after Holm, and says so", () => {
    // p ≈ 0.014 alone, under a first look's 0.025; with two other null comparisons Holm needs p < 0.025/3.
    const marginal = [0.52, -0.13, 0.67, 0.17, 0.57, -0.23, 0.77, 0.12, 0.62, 0.27];
    const alone = run(marginal);
    expect(alone.headline.t.p).toBeGreaterThan(0.025 / 3);
    expect(alone.verdict).toBe("red");
    const a = analyze(
      [500, 1000, 1500].map((rate, i) =>
        named({ pairs: pairsFromDiffs(i === 1 ? marginal : ref.datasets.null_noise.d), rate }),
      ),
      defaultSettings,
    );
    const c = a.comparisons[1]!;
    expect(c.verdict).toBe("grey");
    expect(c.flags.map((f) => f.code)).toContain("not_significant_after_holm");
  });
});

describe("reruns", () => {
  it("pool all pairs of the same build, list each run, and tighten the level per look", () => {
    const builds = { kind: "ab" as const, challenger_sha: "abc1234", champion_sha: "def5678" };
    const first = named({ pairs: pairsFromDiffs(ref.datasets.small_regression.d), runId: "a", builds }, "first.json");
    const second = named({ pairs: pairsFromDiffs(ref.datasets.null_noise.d), runId: "b", builds }, "second.json");
    const a = analyze([first, second], defaultSettings);
    expect(a.headline.pairs).toBe(20);
    expect(a.headline.looks).toBe(2);
    // The second look at its group-sequential level: together with the first, α(1 − 1/4) spent.
    expect(a.headline.confidence).toBeCloseTo(1 - nominalAlphas(0.05, [10, 20])[1]!, 12);
    expect(a.headline.lookHistory.map((l) => [l.run, l.pairs])).toEqual([
      ["first.json", 10],
      ["second.json", 20],
    ]);
    expect(a.runs.map((r) => r.name)).toEqual(["first.json", "second.json"]);
  });

  it("refuse to pool results of different builds", () => {
    const one = named({
      pairs: pairsFromDiffs([1, 2]),
      builds: { kind: "ab", champion_sha: "ccccccc", challenger_sha: "aaaaaaa" },
    });
    const two = named({
      pairs: pairsFromDiffs([1, 2]),
      builds: { kind: "ab", champion_sha: "ccccccc", challenger_sha: "bbbbbbb" },
    });
    expect(() => analyze([one, two])).toThrow(/different builds.*aaaaaaa.*bbbbbbb/);
  });

  it("refuse to pool an A/A run with an A/B run, and say which builds were compared", () => {
    const ab = named(
      { pairs: pairsFromDiffs([1, 2]), builds: { kind: "ab", champion_sha: "ccccccc", challenger_sha: "aaaaaaa" } },
      "ab.json",
    );
    const aa = named(
      { pairs: pairsFromDiffs([1, 2]), builds: { kind: "aa", champion_sha: "ccccccc", challenger_sha: "aaaaaaa" } },
      "aa.json",
    );
    expect(() => analyze([ab, aa])).toThrow(/different builds \(kind: ab \(ab\.json\), aa \(aa\.json\)\)/);
    expect(analyze([ab])).toMatchObject({
      builds: { kind: "ab", champion_sha: "ccccccc", challenger_sha: "aaaaaaa" },
      targets: { champion: "http://127.0.0.1:8001", challenger: "http://127.0.0.1:8002" },
    });
    expect(analyze([named({ pairs: pairsFromDiffs([1, 2]) })]).builds).toBeNull();
  });
});

describe("flags", () => {
  const codes = (a: ReturnType<typeof run>) => a.headline.flags.map((f) => f.code);

  it("heterogeneous effects", () => {
    expect(codes(run([0.1, 1.8, 0.3, 1.5, 0.2, 1.9, 0.4, 1.6, 0.1, 1.7]))).toContain("heterogeneous");
    expect(codes(run(ref.datasets.karan_faster.d))).not.toContain("heterogeneous");
  });

  it("a run that was to hold the CPUs awake and could not says so, with the host's reason", () => {
    const result = makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) });
    expect(codes(analyze([{ name: "r.json", result }], defaultSettings))).not.toContain("cpu_idle_not_held");
    result.host.cpu_idle = "not asked";
    expect(codes(analyze([{ name: "r.json", result }], defaultSettings))).not.toContain("cpu_idle_not_held");
    result.host.cpu_idle = "not held: open /dev/cpu_dma_latency: permission denied";
    const flag = analyze([{ name: "r.json", result }], defaultSettings).headline.flags.find(
      (f) => f.code === "cpu_idle_not_held",
    );
    expect(flag?.message).toMatch(/r\.json: .*permission denied.*CAP_DAC_OVERRIDE/);
  });

  it("slices short of the requests a slice's percentile is read from: three past it", () => {
    const a = run(ref.datasets.null_noise.d, {}, { recorded: 299 });
    expect(codes(a)).toContain("short_of_budget");
    expect(a.headline.flags.find((f) => f.code === "short_of_budget")!.message).toMatch(
      /fewer than the 300 requests a slice's p99 is read from \(fewest: 299\)/,
    );
    expect(codes(run(ref.datasets.null_noise.d, {}, { recorded: 300 }))).not.toContain("short_of_budget");
    expect(codes(run(ref.datasets.null_noise.d, { percentile: 50 }, { recorded: 299 }))).not.toContain(
      "short_of_budget",
    );
    expect(codes(run(ref.datasets.null_noise.d, { percentile: 99.9 }, { recorded: 2999 }))).toContain(
      "short_of_budget",
    );
  });

  it("new connections opened mid-run", () => {
    const a = run(
      ref.datasets.null_noise.d,
      {},
      {
        edit: (s) => {
          if (s.pair === 3 && s.arm === "challenger") s.new_connections = 4;
        },
      },
    );
    expect(a.headline.flags.find((f) => f.code === "new_connections")!.message).toMatch(
      /4 new connections.*challenger/,
    );
    expect(codes(run(ref.datasets.null_noise.d))).not.toContain("new_connections"); // pair 0's are the opening ones
  });

  it("more errors on the challenger make a red, blocking verdict", () => {
    const a = run(
      ref.datasets.null_noise.d,
      {},
      {
        edit: (s) => {
          if (s.arm === "challenger") s.errors["5xx"] = 30;
        },
      },
    );
    expect(codes(a)).toContain("more_errors");
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true);
    // A couple of stray errors is not evidence.
    const stray = run(
      ref.datasets.null_noise.d,
      {},
      {
        edit: (s) => {
          if (s.arm === "challenger" && s.pair === 0) s.errors.timeout = 2;
        },
      },
    );
    expect(stray.verdict).toBe("grey");
  });

  it("the sign test disagreeing with the interval, either way", () => {
    // t significant (p≈0.02) on a mean that only 7 of 10 slices share (sign p≈0.34).
    const tOnly = run([0.1, 0.1, -0.05, 0.2, 0.15, -0.05, 0.1, 0.3, -0.02, 0.12]);
    expect(tOnly.verdict).toBe("red");
    expect(codes(tOnly)).toContain("sign_test_disagrees");
    // Every slice slower (sign p≈0.002) but one huge slice swamps the t interval.
    const signOnly = run([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 50]);
    expect(signOnly.verdict).toBe("grey");
    expect(signOnly.headline.flags.find((f) => f.code === "sign_test_disagrees")!.message).toMatch(/10\+\/0−/);
    expect(codes(run(ref.datasets.karan_faster.d))).not.toContain("sign_test_disagrees");
  });

  it("dropped pairs are counted, not analysed", () => {
    const a = run(
      ref.datasets.karan_faster.d,
      {},
      {
        edit: (s) => {
          if (s.pair === 2 && s.arm === "champion") {
            s.valid = false;
            s.invalid_reason = "overflow: 3 requests";
          }
        },
      },
    );
    expect(a.headline.pairs).toBe(9);
    expect(a.headline.droppedPairs).toEqual([
      { run: "r.json", pair: 2, reason: "champion slice 4: overflow: 3 requests", disturbances: [] },
    ]);
    expect(codes(a)).toContain("dropped_pairs");
  });
});

describe("malformed input", () => {
  const good = () => JSON.parse(JSON.stringify(makeResult({ pairs: pairsFromDiffs([1, 2, 3]) })));

  it("names a missing field", () => {
    const doc = good();
    delete doc.slices[1].latency_us.p99;
    expect(() => parseResult("x.json", doc)).toThrow(/x\.json: .*slices\[1\]\.latency_us\.p99/);
  });

  it("names a NaN", () => {
    const doc = good();
    doc.slices[0].latency_us.p99 = Number.NaN;
    expect(() => parseResult("x.json", doc)).toThrow(/slices\[0\]\.latency_us\.p99/);
  });

  it("rejects an unknown arm and a wrong schema version", () => {
    const doc = good();
    doc.slices[0].arm = "baseline";
    expect(() => parseResult("x.json", doc)).toThrow(/slices\[0\]\.arm/);
    expect(() => parseResult("x.json", { ...good(), schema_version: 2 })).toThrow(/schema_version/);
  });

  it("rejects mismatched arms in a pair: read, against the run's order; built in-process, by the analysis", () => {
    const doc = good();
    doc.slices[1].arm = "champion";
    expect(() => parseResult("x.json", doc)).toThrow(
      /x\.json: not a load generator result: slices\[1\]\.arm: champion, but the run's order measures the challenger in slice 1/,
    );
    expect(() => analyze([{ name: "x.json", result: doc }])).toThrow(
      /x\.json: pair 0 has both slices on the champion arm/,
    );
  });

  it("zero valid pairs: the generator refused every slice, so it could not measure", () => {
    const r = makeResult({
      pairs: pairsFromDiffs([1, 2, 3]),
      edit: (s) => {
        s.valid = false;
        s.invalid_reason = "interrupted";
      },
    });
    expect(() => analyze([{ name: "x.json", result: r }])).toThrow(CouldNotMeasureError);
    expect(() => analyze([{ name: "x.json", result: r }])).toThrow(
      /^could not measure: .*0 valid pairs; at least 2 are needed \(3 dropped: x\.json pair 0: .*interrupted/,
    );
    // A result of one pair, none dropped, is too short to analyse: the input's error.
    const one = makeResult({ pairs: pairsFromDiffs([1]) });
    expect(() => analyze([{ name: "x.json", result: one }])).toThrow(AnalysisInputError);
  });

  it("bad settings name the field", () => {
    expect(() => run([1, 2], { percentile: 100 })).toThrow(/settings\.percentile/);
    expect(() => run([1, 2], { sloBudgetMs: -5 })).toThrow(/settings\.sloBudgetMs/);
  });
});

describe("gRPC status codes", () => {
  it("counts them as failures: a workload whose calls mostly fail on both arms is a configuration error, named by code", () => {
    const result = makeResult({ pairs: pairsFromDiffs([0.1, 0.2, 0.1, 0.3, 0.2]) });
    for (const s of result.slices) {
      s.ok = 0;
      s.errors = { ...s.errors, grpc: { unimplemented: s.completed - 3, unavailable: 3 } };
    }
    expect(() => analyze([{ name: "grpc.json", result }], defaultSettings)).toThrow(
      /most requests failed on both arms \(champion 100% failed of \d+ \(grpc unimplemented \d+, grpc unavailable 15\)/,
    );
  });
});
