// The shared rule's retry of a known slowdown (untilResolved): at most three measurements, the
// test's own first among them, and a skip that names every interval when none resolves it.
import type { TestContext } from "vitest";
import { describe, expect, it } from "vitest";
import { untilResolved } from "./machine-too-busy";

type Run = { stdout: string; outputs: Record<string, string> };
const run = (verdict: string, low: number, high: number): Run => ({
  stdout: "",
  outputs: { verdict, "ci-low-ms": String(low), "ci-high-ms": String(high) },
});
const RED = run("red", 0.7, 0.9);
const WIDE = run("grey", -0.27, 1.46); // CI's, for the slow build's +0.9 ms: it holds 0 and 0.9
const NARROW_GREY = run("grey", -0.1, 0.1); // short of 0.9: the gate's own fault
const GREEN = run("green", -1.6, -0.1);

/** A test context whose skip throws, as vitest's does, with the note. */
function context(): TestContext {
  return {
    task: { name: "a test" },
    skip: (note: string) => {
      throw new Error(`skipped: ${note}`);
    },
  } as unknown as TestContext;
}

/** again() answering the runs given, in turn, and the measurement numbers it was asked for. */
function measures(...runs: Run[]) {
  const asked: number[] = [];
  return {
    asked,
    again: async (n: number) => {
      asked.push(n);
      return runs.shift()!;
    },
  };
}

describe("untilResolved", () => {
  it("takes a first gate that resolves the slowdown as the answer, measuring nothing more", async () => {
    const m = measures();
    expect(await untilResolved(context(), 0.9, m.again, RED)).toEqual({ run: RED, runs: 1 });
    expect(m.asked).toEqual([]);
  });

  it("measures again, pooled, while the first gate's interval is too wide, three measurements in all", async () => {
    const m = measures(WIDE, RED);
    expect(await untilResolved(context(), 0.9, m.again, WIDE)).toEqual({ run: RED, runs: 3 });
    expect(m.asked).toEqual([1, 2]);
  });

  it("counts the test's own earlier first measurement when it is not given", async () => {
    const m = measures(RED);
    expect(await untilResolved(context(), 0.9, m.again)).toEqual({ run: RED, runs: 2 });
    expect(m.asked).toEqual([1]);
  });

  it("answers with a grey short of the slowdown, or a green: the gate's own fault, for the test to fail on", async () => {
    for (const wrong of [NARROW_GREY, GREEN]) {
      const m = measures();
      expect(await untilResolved(context(), 0.9, m.again, wrong)).toEqual({ run: wrong, runs: 1 });
      expect(m.asked).toEqual([]);
    }
  });

  it("skips, machine too busy, naming all three intervals, when none resolves the slowdown", async () => {
    const m = measures(WIDE, WIDE);
    await expect(untilResolved(context(), 0.9, m.again, WIDE)).rejects.toThrow(
      /^skipped: machine too busy: 3 tries could not measure\ntry 1: the pooled interval \[-0\.27, 1\.46\] ms cannot resolve \+0\.9 ms\ntry 2: .*\ntry 3: /,
    );
    expect(m.asked).toEqual([1, 2]);
  });

  it("skips at once on a run the host could not vouch for", async () => {
    const disturbed = { ...WIDE, stdout: "could not measure: the load generator was disturbed in 4 of 6 pairs" };
    const m = measures();
    await expect(untilResolved(context(), 0.9, m.again, disturbed)).rejects.toThrow(
      /^skipped: machine too busy: could not measure: the load generator was disturbed/,
    );
    expect(m.asked).toEqual([]);
  });
});
