// The request classes in a report: the line near the top names the class that moved with its
// interval and the others as unchanged; the comparison's section folds the whole table; the
// JSON carries it all.
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../src/analysis/random";
import { analyze } from "../../src/analysis/verdict";
import { analysisJson } from "../../src/report/json";
import { markdownReport } from "../../src/report/markdown";
import { firstLookAt95, resultWithClasses } from "../analysis/fixtures";

function lognormal(rand: () => number, n: number, medianUs: number): number[] {
  return Array.from({ length: n }, () =>
    Math.round(medianUs * Math.exp(0.3 * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()))),
  );
}

function mixed(reportShiftUs: number) {
  const rand = seededRandom(5);
  const pairs = (n: number, median: number, shift: number) =>
    Array.from({ length: 24 }, () => ({
      champion: lognormal(rand, n, median),
      challenger: lognormal(rand, n, median).map((v) => v + shift),
    }));
  return resultWithClasses(
    [
      { request: { method: "GET", path: "/work", weight: 9 }, pairs: pairs(300, 400, 0) },
      { request: { method: "GET", path: "/report", weight: 1 }, pairs: pairs(40, 6000, reportShiftUs) },
    ],
    "run-1",
    { kind: "ab", champion_sha: "89bd5b9aa", challenger_sha: "02711bdcc" },
  );
}

describe("request classes in the report", () => {
  const a = analyze([{ name: "run-1", result: mixed(3000) }], {
    ...firstLookAt95,
    percentile: 90,
    samplingResamples: 0,
  });
  const md = markdownReport(a);

  it("names the class that moved with its interval, and the other as unchanged, right after the verdict", () => {
    const line = md.split("\n").find((l) => l.startsWith("**Request classes:**"))!;
    expect(line).toMatch(
      /^\*\*Request classes:\*\* `GET \/report` \+\d\.\d\d ms \[\+\d\.\d\d, \+\d\.\d\d\] at p90; `GET \/work` no detectable change at p90\.$/,
    );
    expect(md.indexOf(line)).toBeLessThan(md.indexOf("#### "));
    expect(md.indexOf(line)).toBeGreaterThan(md.indexOf("### perf-gate"));
  });

  it("folds every class's numbers in the comparison's section", () => {
    expect(md).toContain(
      "<details><summary>Request classes: each class's paired difference (challenger − champion), at 95%, Holm across classes</summary>",
    );
    expect(md).toMatch(
      /\| `GET \/report` \| 960 \/ 960 \| 0 \/ 0 \| 40 \| \+\d\.\d\d ms \[\+\d\.\d\d, \+\d\.\d\d\] \*\*moved\*\*, Holm p /,
    );
  });

  it("carries the classes in the JSON, in the report's order", () => {
    const json = analysisJson(a).comparisons[0]!.classes;
    expect(json.missing).toBeNull();
    expect(json.classes.map((c) => [c.name, c.slo?.moved])).toEqual([
      ["GET /report", true],
      ["GET /work", false],
    ]);
    expect(json.classes[0]!.slo).toMatchObject({ percentile: 90, estimator: "pooled" });
  });
});
