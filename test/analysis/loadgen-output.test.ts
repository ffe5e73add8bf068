// The verdict engine on real output of the layer below: the load generator binary against
// two real HTTP servers on loopback, one of which adds a fixed delay.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseResult } from "../../src/analysis/result-schema";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { markdownReport } from "../../src/report/markdown";
import { buildHostBinaries, runLoadgen } from "../support/loadgen";

const DELAY_MS = 4;
let fast: Server;
let slow: Server;

const listen = (delayMs: number) =>
  new Promise<Server>((resolve) => {
    const s = createServer((_req, res) => {
      const reply = () => res.end("ok");
      if (delayMs > 0) setTimeout(reply, delayMs);
      else reply();
    });
    s.keepAliveTimeout = 60_000; // Node's 5 s default would drop idle connections between slices
    s.listen(0, "127.0.0.1", () => resolve(s));
  });
const url = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  await buildHostBinaries();
  [fast, slow] = await Promise.all([listen(0), listen(DELAY_MS)]);
});
afterAll(() => {
  fast?.close();
  slow?.close();
});

const plan = (challenger: Server) => ({
  targets: { champion: url(fast), challenger: url(challenger) },
  workload: "echo", rate: 500, slice_seconds: 2.2, pairs: 4, seed: 9, warmup_seconds: 0.5, connections: 8,
  requests: [{ path: "/x/{{seq}}" }],
});

describe("verdict on real load generator output", () => {
  it("a challenger slower by a fixed delay is red and blocking, by about the delay", async () => {
    const result = parseResult("ab.json", await runLoadgen(plan(slow)));
    const a = analyze([{ name: "ab.json", result }], { ...defaultSettings, sloBudgetMs: 100 });
    const h = a.headline;
    console.log(`[loadgen→verdict] A/B: ${h.estimateMs.toFixed(3)} ms, CI [${h.ciMs.map((x) => x.toFixed(3)).join(", ")}]`);
    expect(a.verdict).toBe("red");
    expect(a.blocking).toBe(true); // threshold 1 ms on a 100 ms budget
    // Node's timers add up to ~1 ms (and more under load) to the 4 ms delay.
    expect(h.estimateMs).toBeGreaterThan(DELAY_MS * 0.9);
    expect(h.estimateMs).toBeLessThan(DELAY_MS + 4);
    expect(h.pairs).toBe(4);
    expect(h.flags.map((f) => f.code)).not.toContain("short_of_budget");
    expect(markdownReport(a)).toContain("🔴 red — blocking");
  });

  it("the same server on both arms is grey", async () => {
    const result = parseResult("aa.json", await runLoadgen(plan(fast)));
    const a = analyze([{ name: "aa.json", result }], { ...defaultSettings, sloBudgetMs: 100 });
    console.log(`[loadgen→verdict] A/A: ${a.headline.estimateMs.toFixed(3)} ms, CI [${a.headline.ciMs.map((x) => x.toFixed(3)).join(", ")}]`);
    expect(a.verdict).not.toBe("red");
    expect(a.blocking).toBe(false);
  });
});
