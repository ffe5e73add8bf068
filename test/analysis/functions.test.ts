// The functions whose CPU per request moved: the pooled ratio difference and its jackknife over
// pairs against numpy/scipy reference values, the breakdown on synthetic profiles (a caller
// carried by the function it always calls is left out for it), and simulated A/A gates, which
// must show a function past its noise in about 1 gate of 20 at most.
import { describe, expect, it } from "vitest";
import { studentTQuantile } from "../../src/analysis/distributions";
import { functionBreakdown, ratioDifference } from "../../src/analysis/functions";
import { extractPairs } from "../../src/analysis/pairs";
import { normalDraw, seededRandom } from "../../src/analysis/random";
import type { HostResult, Profiles } from "../../src/contract/result";
import { makeResult, pairsFromDiffs } from "./fixtures";
import ref from "./reference-functions.json";

describe("the ratio difference (numpy/scipy reference)", () => {
  for (const [i, c] of ref.cases.entries()) {
    it(`case ${i}: ${c.champion.length} pairs`, () => {
      const r = ratioDifference(c.champion, c.champion_requests, c.challenger, c.challenger_requests);
      expect(r.estimate).toBeCloseTo(c.estimate, 12);
      expect(r.se).toBeCloseTo(c.se, 12);
      const level = 1 - (1 - c.confidence) / c.functions;
      expect(studentTQuantile(1 - (1 - level) / 2, c.champion.length - 1) * r.se).toBeCloseTo(c.half_width, 9);
    });
  }
});

/** Poisson(mean) by inversion: small means only. */
function poisson(rand: () => number, mean: number): number {
  if (mean > 50) return Math.max(0, Math.round(mean + Math.sqrt(mean) * normalDraw(rand)));
  let k = 0;
  let p = Math.exp(-mean);
  let cdf = p;
  const u = rand();
  while (u > cdf) {
    k++;
    p *= mean / k;
    cdf += p;
  }
  return k;
}

/**
 * A host result of `pairs` pairs with profiles: each function's samples per slice drawn around
 * its rate (samples per 100 requests), a pair's host speed shared by both slices; `grow` adds
 * to the challenger's rates (a function and what is above it).
 */
function profiled(
  seed: number,
  pairs: number,
  rates: Record<string, number>,
  callers: Record<string, string[]>,
  grow: Record<string, number> = {},
): HostResult {
  const rand = seededRandom(seed);
  const result = makeResult({
    pairs: pairsFromDiffs(Array.from({ length: pairs }, () => 0)),
    recorded: 300,
  }) as HostResult;
  const functions = Object.keys(rates);
  const profiles: Profiles = {
    status: "recorded",
    event: "cpu-clock",
    frequency_hz: 499,
    cpu_seconds: 0.4,
    arms: {
      champion: { file: "champion.pb.gz", bytes: 8000, samples: 0 },
      challenger: { file: "challenger.pb.gz", bytes: 8100, samples: 0 },
    },
    functions,
    callers: functions.map((f) => (callers[f] ?? []).map((g) => functions.indexOf(g))),
    slices: [],
  };
  const host = Array.from({ length: pairs }, () => Math.exp(0.1 * normalDraw(rand)));
  for (const s of result.slices) {
    s.completed = 300 + Math.floor(rand() * 40);
    const counts = functions.map(
      (f, i) =>
        [
          i,
          poisson(
            rand,
            (host[s.pair]! * s.completed * (rates[f]! + (s.arm === "challenger" ? (grow[f] ?? 0) : 0))) / 100,
          ),
          0,
        ] as [number, number, number],
    );
    profiles.slices!.push({ index: s.index, samples: Math.max(...counts.map((x) => x[1])), functions: counts });
  }
  result.profiles = profiles;
  return result;
}

describe("the functions that moved", () => {
  const rates = {
    "runtime.goexit": 60,
    "net/http.(*conn).serve": 58,
    "main.main.func3": 40,
    "main.summarizeReport": 0.1,
    "crypto/sha256.block": 30,
  };
  const callers = {
    "net/http.(*conn).serve": ["runtime.goexit"],
    "main.main.func3": ["net/http.(*conn).serve", "runtime.goexit"],
    "main.summarizeReport": ["main.main.func3", "net/http.(*conn).serve", "runtime.goexit"],
    "crypto/sha256.block": ["runtime.goexit"],
  };

  it("lists the function the change made slower, not the callers its growth passes through, with each one's noise", () => {
    const grow = {
      "runtime.goexit": 12,
      "net/http.(*conn).serve": 12,
      "main.main.func3": 12,
      "main.summarizeReport": 12,
    };
    const result = profiled(4, 40, rates, callers, grow);
    const { pairs } = extractPairs("run-1", result, 99);
    const f = functionBreakdown([{ name: "run-1", result }], pairs, 0.95);
    expect(f.status).toBe("recorded");
    expect(f.grew.map((x) => x.name)).toEqual(["main.summarizeReport"]);
    const top = f.grew[0]!;
    // 12 samples per 100 requests at 499 Hz: 12/100 × 2004 µs ≈ 240 µs per request.
    expect(top.ciUs[0]).toBeLessThan(240.5);
    expect(top.ciUs[1]).toBeGreaterThan(240.5);
    expect(top.noiseUs).toBeGreaterThan(0);
    expect(top.ciUs[0]).toBeGreaterThan(0);
    expect(f.tested).toBe(5);
    expect(f.confidence).toBeCloseTo(1 - 0.05 / 5, 12);
    expect(f.shrank).toEqual([]);
    expect(f.files.map((x) => `${x.arm} ${x.file} ${x.bytes}`)).toEqual([
      "champion champion.pb.gz 8000",
      "challenger challenger.pb.gz 8100",
    ]);
  });

  it("says why there are no profiles when the host could not sample, and nothing when none were asked for", () => {
    const result = makeResult({ pairs: pairsFromDiffs([0, 0, 0]) }) as HostResult;
    const { pairs } = extractPairs("r", result, 99);
    expect(functionBreakdown([{ name: "r", result }], pairs, 0.95).status).toBe("not_asked");
    result.profiles = { status: "not_available", reason: "no perf on this host" };
    expect(functionBreakdown([{ name: "r", result }], pairs, 0.95)).toMatchObject({
      status: "not_available",
      reason: "no perf on this host",
    });
  });

  it("refuses a host's profiles that do not hold together, naming what", () => {
    for (const [edit, want] of [
      [(p: Profiles) => (p.slices![3]!.functions[1]![0] = 99), "slices[3].functions[1] names function 99 of 5"],
      [(p: Profiles) => (p.slices![0]!.functions[0]![2] = 10_000), "slices[0].functions[0]: counts"],
      [(p: Profiles) => (p.callers![2] = [-1]), "callers[2] names function -1 of 5"],
    ] as const) {
      const result = profiled(4, 10, rates, callers);
      edit(result.profiles!);
      const { pairs } = extractPairs("run-1", result, 99);
      const f = functionBreakdown([{ name: "run-1", result }], pairs, 0.95);
      expect(f.status).toBe("not_available");
      expect(f.reason).toContain(`the host's profiles are malformed: ${want}`);
    }
  });

  // Identical builds: 40 functions tested at the Bonferroni level; a gate shows a function past
  // its noise in about 5% of gates at most. 300 gates: the rate's sd is 1.3% at 5%.
  it("shows no function past its noise in about 95% of simulated A/A gates", () => {
    const many: Record<string, number> = {};
    for (let i = 0; i < 40; i++) many[`f${i}`] = 0.5 + 40 / (i + 1);
    let labelled = 0;
    const gates = 300;
    for (let g = 0; g < gates; g++) {
      const result = profiled(100 + g, 30, many, {});
      const { pairs } = extractPairs("r", result, 99);
      const f = functionBreakdown([{ name: "r", result }], pairs, 0.95);
      if (f.grew.length + f.shrank.length > 0) labelled++;
    }
    console.log(`A/A gates with a function past its noise: ${labelled} of ${gates}`);
    expect(labelled / gates).toBeLessThanOrEqual(0.08);
  });
});
