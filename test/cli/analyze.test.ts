// perf-gate analyze, run from the committed bundle the way users run it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { makeResult, pairsFromDiffs } from "../analysis/fixtures";
import ref from "../analysis/reference-values.json";
import { perfGate as run } from "../support/cli";
import { scratchDir } from "../support/scratch";

let dir: string;

const perfGate = (...args: string[]) => run(args);

const write = (name: string, doc: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(doc));
  return path;
};

beforeAll(() => {
  dir = scratchDir("cli");
});

describe("perf-gate analyze", () => {
  it("prints the JSON fields and exits 1 on a blocking regression", async () => {
    const file = write(
      "slow.json",
      makeResult({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]) }),
    );
    const md = join(dir, "report.md");
    const svg = join(dir, "chart.svg");
    const r = await perfGate("analyze", "--json", "--markdown", md, "--svg", svg, file);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ verdict: "red", grey_kind: null, blocking: true, pairs: 10, seed: 1 });
    for (const key of ["estimate_ms", "ci_ms", "method", "sign_test_p", "wilcoxon_p"]) expect(out).toHaveProperty(key);
    expect(out.method).toMatch(/Student t/);
    expect(readFileSync(md, "utf8")).toContain("### perf-gate: 🔴 red, blocking — challenger is ");
    expect(readFileSync(svg, "utf8")).toMatch(/^<svg/);
  });

  it("takes the SLO, percentile, threshold and floor from flags", async () => {
    const file = write("small.json", makeResult({ pairs: pairsFromDiffs(ref.datasets.small_regression.d) }));
    const r = await perfGate(
      "analyze",
      "--json",
      "--slo-ms",
      "20",
      "--block-threshold-percent",
      "1",
      "--floor-ms",
      "0.01",
      file,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: "red", blocking: true, threshold_ms: 0.2, floor_ms: 0.01 });
    const p50 = await perfGate("analyze", "--json", "--percentile", "50", file);
    expect(JSON.parse(p50.stdout).percentile).toBe(50);
  });

  it("--each analyses files one by one; without it they pool as reruns", async () => {
    const a = write("a.json", makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d) }));
    const b = write("b.json", makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d) }));
    const each = await perfGate("analyze", "--each", a, b);
    const lines = each.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.file, l.verdict, l.pairs])).toEqual([
      [a, "grey", 10],
      [b, "green", 10],
    ]);
    const pooled = await perfGate("analyze", "--json", a, b);
    expect(JSON.parse(pooled.stdout).pairs).toBe(20);
  });

  it("reads a list of results, as perf-gate run writes result.json, pooling them", async () => {
    const list = write("list.json", [
      makeResult({ pairs: pairsFromDiffs(ref.datasets.null_noise.d), runId: "a" }),
      makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d), runId: "b" }),
    ]);
    const pooled = JSON.parse((await perfGate("analyze", "--json", list)).stdout);
    expect(pooled.pairs).toBe(20);
    expect(pooled.runs.map((r: { name: string; runId: string }) => [r.name, r.runId])).toEqual([
      [`${list}[0]`, "a"],
      [`${list}[1]`, "b"],
    ]);
    const each = await perfGate("analyze", "--each", list);
    expect(
      each.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).file),
    ).toEqual([`${list}[0]`, `${list}[1]`]);
    const empty = await perfGate("analyze", write("empty.json", []));
    expect(empty).toMatchObject({ code: 2, stderr: expect.stringMatching(/empty\.json: an empty list of results/) });
  });

  it("prints the quartet by default", async () => {
    const r = await perfGate(
      "analyze",
      write("k.json", makeResult({ pairs: pairsFromDiffs(ref.datasets.karan_faster.d) })),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^GREEN: challenger is 0\.93 ms faster at p99 \(97\.5% CI/);
  });

  it("exits 2 with a message that names the problem", async () => {
    const broken = makeResult({ pairs: pairsFromDiffs([1, 2]) }) as unknown as { slices: Record<string, unknown>[] };
    delete broken.slices[0]!.ok_rps;
    const badHistogram = makeResult({ pairs: pairsFromDiffs([1, 2]) }) as unknown as {
      slices: Record<string, unknown>[];
    };
    badHistogram.slices[1]!.histogram = "HISTFAAAAKt4garbage";
    const cases: [string[], RegExp][] = [
      [[write("broken.json", broken)], /broken\.json: not a load generator result: slices\[0\]\.ok_rps/],
      [[join(dir, "missing.json")], /missing\.json: cannot read/],
      [
        [write("histogram.json", badHistogram)],
        /histogram\.json: slices\[1\]\.histogram: not a compressed HdrHistogram in base64/,
      ],
      // Read whole only when a regular file: /dev/zero would never end, nor fit in memory.
      [["/dev/zero"], /\/dev\/zero: not a regular file: a result is read from one/],
      [[dir], /: not a regular file: a result is read from one/],
      [[write("text.json", "not json") && join(dir, "text.json")], /text\.json: not a load generator result/],
      [
        ["--slo-ms", "fast", write("ok.json", makeResult({ pairs: pairsFromDiffs([1, 2]) }))],
        /--slo-ms: expected a number, got "fast"/,
      ],
      [[], /no result files given/],
      // Each flag's form said with the flag's name, not the analysis's setting.
      [["--slo-ms=-5", join(dir, "ok.json")], /--slo-ms: expected a positive number of ms, got -5/],
      [["--floor-ms=-1", join(dir, "ok.json")], /--floor-ms: expected a non-negative number of ms, got -1/],
      [["--confidence", "1.5", join(dir, "ok.json")], /--confidence: expected a confidence between 0\.5 and 1/],
      [["--slo-ms", "0x10", join(dir, "ok.json")], /--slo-ms: expected a number, got "0x10"/],
      // An output over an input, or one file given twice, loses it or counts it twice.
      [
        ["--markdown", join(dir, "ok.json"), join(dir, "ok.json")],
        /--markdown .*ok\.json: the same file as the result .*ok\.json; name another/,
      ],
      [[join(dir, "ok.json"), join(dir, "ok.json")], /the result .*ok\.json: the same file as the result/],
      // Given twice with two values, a flag would keep the last one and lose the other.
      [
        ["--markdown", join(dir, "a.md"), "--markdown", join(dir, "b.md"), join(dir, "ok.json")],
        /--markdown: given 2 times \(--markdown .*a\.md, --markdown .*b\.md\); give it once/,
      ],
      [["--slo-ms", "50", "--slo-ms=60", join(dir, "ok.json")], /--slo-ms: given 2 times \(--slo-ms 50, --slo-ms 60\)/],
      // A result whose fields each pass but together describe no run (src/contract/consistency.ts).
      [
        [
          write("order.json", {
            ...makeResult({ pairs: pairsFromDiffs([1, 2]) }),
            order: ["champion", "champion", "challenger", "champion"],
          }),
        ],
        /order\.json: not a load generator result: order: pair 0 measures the champion twice/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await perfGate("analyze", ...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    // The same value twice loses nothing.
    expect((await perfGate("analyze", "--slo-ms", "50", "--slo-ms", "50", join(dir, "ok.json"))).code).not.toBe(2);
  });
});
