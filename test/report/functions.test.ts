// The functions that moved in a report: the line after the request classes names the function
// the change made slower with its interval and the profiles to diff; a host without perf says
// why there are none; the gate shows them on red with profile: on-red, always with always.
import { describe, expect, it } from "vitest";
import { extractPairs } from "../../src/analysis/pairs";
import { analyze } from "../../src/analysis/verdict";
import type { HostResult } from "../../src/contract/result";
import { showsFunctions } from "../../src/experiment/gate";
import { analysisJson } from "../../src/report/json";
import { markdownReport } from "../../src/report/markdown";
import { firstLookAt95, makeResult, pairsFromDiffs } from "../analysis/fixtures";

/** A red result whose profiles say main.summarizeReport grew by 10 samples per 100 requests. */
function redWithProfiles(): HostResult {
  const result = makeResult({
    pairs: pairsFromDiffs(Array.from({ length: 30 }, (_, i) => 2 + 0.1 * (i % 5))),
    builds: { kind: "ab", champion_sha: "89bd5b9aa", challenger_sha: "02711bdcc" },
  }) as HostResult;
  const functions = ["runtime.goexit", "main.summarizeReport", "crypto/sha256.block"];
  result.profiles = {
    status: "recorded",
    event: "cpu-clock",
    frequency_hz: 499,
    cpu_seconds: 0.35,
    arms: {
      champion: { file: "champion.pb.gz", bytes: 21_000, samples: 0 },
      challenger: { file: "challenger.pb.gz", bytes: 23_500, samples: 0 },
    },
    functions,
    callers: [[], [0], [0]],
    slices: result.slices.map((s) => {
      const grew = s.arm === "challenger" ? 900 + (s.pair % 3) : 0;
      return {
        index: s.index,
        samples: 3000 + grew,
        functions: [
          [0, 3000 + grew, 0],
          [1, grew + (s.pair % 2), grew],
          [2, 2000 + (s.pair % 4), 2000],
        ] as [number, number, number][],
      };
    }),
  };
  return result;
}

describe("the functions that moved in the report", () => {
  it("names the function the change made slower after the request classes, with the profiles to diff", () => {
    const a = analyze([{ name: "run-1", result: redWithProfiles() }], { ...firstLookAt95, samplingResamples: 0 });
    expect(a.verdict).toBe("red");
    const md = markdownReport(a);
    const line = md.split("\n").find((l) => l.startsWith("**Functions that moved"))!;
    expect(line).toMatch(
      /^\*\*Functions that moved\*\* \(CPU per request with what each calls, each past its own noise at 98\.33% over 3 functions\): grew in the challenger: `main\.summarizeReport` \+20\d µs \[\+\d+ µs, \+\d+ µs\] \(0\.\d\d µs → 20\d µs\); profiles champion\.pb\.gz 20\.5 KiB, challenger\.pb\.gz 22\.9 KiB: `go tool pprof -diff_base champion\.pb\.gz challenger\.pb\.gz`\.$/,
    );
    expect(md.indexOf(line)).toBeLessThan(md.indexOf("#### "));
    expect(md).toContain(
      "<details><summary>Functions: CPU per request (µs) with what each calls, challenger − champion, at 98.33% each</summary>",
    );
    expect(md).toContain("perf itself used 0.35 CPU s, counted as neither arm's");
    expect(analysisJson(a).comparisons[0]!.functions.grew.map((f) => f.name)).toEqual(["main.summarizeReport"]);
    // Left out where the gate does not show them.
    expect(markdownReport(a, { functions: false })).not.toContain("Functions");
  });

  it("says why there are no profiles when the host could not sample", () => {
    const result = redWithProfiles();
    result.profiles = {
      status: "not_available",
      reason: 'no perf on this host (exec: "perf": executable file not found in $PATH): install Debian\'s linux-perf',
    };
    const a = analyze([{ name: "run-1", result }], { ...firstLookAt95, samplingResamples: 0 });
    expect(markdownReport(a)).toContain(
      '**Profiles:** not available (no perf on this host (exec: "perf": executable file not found in $PATH): install Debian\'s linux-perf); the verdict is the same without them.',
    );
    expect(extractPairs("run-1", result, 99).pairs).toHaveLength(30);
  });

  it("the gate shows them on a red verdict with profile: on-red, on every verdict with always, never with never", () => {
    expect(showsFunctions({ profile: "on-red" }, { verdict: "red" })).toBe(true);
    expect(showsFunctions({ profile: "on-red" }, { verdict: "grey" })).toBe(false);
    expect(showsFunctions({ profile: "always" }, { verdict: "green" })).toBe(true);
    expect(showsFunctions({ profile: "never" }, { verdict: "red" })).toBe(false);
  });
});
