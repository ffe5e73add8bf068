// A slice where the measured arm served connections the load generator did not open (the host
// counts them from the server side: foreign_connections, and marks the slice disturbed) measured
// someone else's load too, so its pair is dropped like one the host could not vouch for, and
// most pairs so disturbed is "could not measure": a host without the packet filter between the
// arms still cannot give a label to a challenger that loads the champion. Read on the real A/A
// recording of integrity-cases.test.ts, its calm pairs only.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeHostDisturbance, hostDisturbance } from "../../src/analysis/health";
import { CouldNotMeasureError } from "../../src/analysis/unmeasured";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { type LoadgenResult, parseResult, type Slice } from "../../src/contract/result";

const NAME = "aa-busy-vm.json";
const recorded = (): LoadgenResult =>
  parseResult(NAME, JSON.parse(readFileSync(join(import.meta.dirname, "testdata", NAME), "utf8")));
const run = (result: LoadgenResult) => analyze([{ name: NAME, result }], defaultSettings);
const PEER = "user perf-gate-challenger (uid 998): 12";

/** The recording's calm pairs (those the generator's own rule keeps), the champion reached in `reached` of them, as the host marks them. */
function reachedIn(reached: number): LoadgenResult {
  const r = recorded();
  const dropped = new Set(run(r).headline.droppedPairs.map((d) => d.pair));
  const slices = r.slices.filter((s) => !dropped.has(s.pair));
  const pairs = [...new Set(slices.map((s) => s.pair))].slice(0, reached);
  const mark = (s: Slice): Slice => ({
    ...s,
    foreign_connections: 12,
    foreign_peers: [PEER],
    host_disturbance: `reached: the champion served 12 connections the load generator did not open (${PEER})`,
  });
  return { ...r, slices: slices.map((s) => (s.arm === "champion" && pairs.includes(s.pair) ? mark(s) : s)) };
}

describe("an arm reached by others than the load generator", () => {
  it("is a disturbance that names the connections and who opened them", () => {
    const s = reachedIn(1).slices.find((x) => (x.foreign_connections ?? 0) > 0)!;
    const d = hostDisturbance(s)!;
    expect(d).toMatchObject({ foreignConnections: 12 });
    expect(describeHostDisturbance(d)).toBe(
      `champion slice ${s.index}: the host was disturbed (reached: the champion served 12 connections the load generator did not open (${PEER}))`,
    );
  });

  it("drops the pair and flags it as reached, not as foreign load, when a few pairs are reached", () => {
    const a = run(reachedIn(1));
    const flag = a.headline.flags.find((f) => f.code === "arm_reached");
    expect(flag?.message).toMatch(
      /^1 pair dropped because an arm served connections the load generator did not open: .* pair \d+: champion slice \d+ \(reached: the champion served 12 connections/,
    );
    expect(a.headline.flags.find((f) => f.code === "host_disturbed")).toBeUndefined();
  });

  it("could not measure when most pairs are reached: no label", () => {
    const r = reachedIn(1000);
    expect(() => run(r)).toThrow(CouldNotMeasureError);
    expect(() => run(r)).toThrow(
      /^could not measure: an arm served connections the load generator did not open in \d+ of \d+ pairs/,
    );
  });
});
