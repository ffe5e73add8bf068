// A red that explains itself, on a real local gate: the example service's slowreport build
// makes only /report slower (main.summarizeReport, about 1 ms more per report), in a workload of
// 95% /work and 5% /report. The verdict is on the workload as a whole; the report names /report
// as the class that moved and /work as unchanged (docs/design/0020-request-classes.md).
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildServiceBinaries } from "../support/bench-host";
import { LocalGate } from "../support/local-gate";
import { buildHostBinaries } from "../support/loadgen";
import { skipIfMachineTooBusy } from "../support/machine-too-busy";

let dir: string;
let local: LocalGate;
const build = (bin: string, variant: string) => {
  const release = join(dir, variant);
  mkdirSync(join(release, "bin"), { recursive: true });
  copyFileSync(join(bin, `service-${variant}`), join(release, "bin/service"));
  chmodSync(join(release, "bin/service"), 0o755);
  return release;
};

/** The mixed workload: 19 /work to 1 /report, 400 req/s, p99, 20 pairs of 1.5 s (26 reports a slice). */
const config = (profile: string) => {
  const path = join(dir, `config-${profile}.yml`);
  writeFileSync(path, `service:
  command: ["./bin/service"]
  env: {HASH_ROUNDS: "200"}
slo: {percentile: 99, budget_ms: 50}
slices: {seconds: 1.5, pairs: 20, max_extensions: 0}
warmup_seconds: 2
profile: ${profile}
workloads:
  - name: mixed
    rates: [400]
    requests:
      - {name: work, path: "/work?key={{rand 1000}}", weight: 19}
      - {name: report, path: "/report?key={{rand 100}}", weight: 1}
`);
  return path;
};

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  dir = mkdtempSync(join(tmpdir(), "perf-gate-explain-"));
  chmodSync(dir, 0o755);
  build(bin, "fast");
  build(bin, "slowreport");
  local = await LocalGate.onFreePorts(dir);
});

afterAll(() => {
  if (dir) local.stop(join(dir, "host"));
});

interface ClassJson {
  name: string;
  slo: { moved: boolean; estimate_ms: number } | null;
  p50: { moved: boolean; estimate_ms: number; ci_ms: [number, number] } | null;
  short: { slo: string | null };
}

describe("a red that explains itself", () => {
  it("names /report as the class that moved and /work as unchanged", async (ctx) => {
    const out = join(dir, "out-classes");
    const r = await local.run(join(dir, "host"), "--config", config("never"), "--champion", join(dir, "fast"), "--challenger", join(dir, "slowreport"), "--out", out, "--max-foreign-cores", "64", "--settle-seconds", "1");
    skipIfMachineTooBusy(ctx, r);
    expect(r.code, r.stderr).toBeLessThan(2);
    const analysis = JSON.parse(readFileSync(join(out, "analysis.json"), "utf8")) as { verdict: string; comparisons: { classes: { classes: ClassJson[] } }[] };
    expect(analysis.verdict).toBe("red");
    const [report, work] = analysis.comparisons[0]!.classes.classes;
    expect(report!.name).toBe("report");
    expect(report!.p50!.moved).toBe(true);
    expect(report!.p50!.ci_ms[0]).toBeGreaterThan(0);
    // 26 reports a slice: too few for a slice's p99 (300), enough for its p50.
    expect(report!.slo).toBeNull();
    expect(report!.short.slo).toMatch(/fewer than the 300 a slice's p99 is read from/);
    expect(work!.name).toBe("work");
    expect(work!.slo!.moved).toBe(false);
    const md = readFileSync(join(out, "report.md"), "utf8");
    expect(md).toMatch(/^\*\*Request classes:\*\* `report` \+[\d.]+ ms \[\+[\d.]+, \+[\d.]+\] at p50 \(too few requests per slice for p99\); `work` no detectable change/m);
  });
});
