// A result whose fields each pass the schema but together describe no run is refused before a
// verdict reads it, naming the field: on real recordings (a load generator's and a host's),
// each edited one way.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resultInconsistency } from "../../src/contract/consistency";
import { type LoadgenResult, parseResult } from "../../src/contract/result";
import { resultWithClasses } from "../analysis/fixtures";

const recording = (dir: string, name: string): LoadgenResult =>
  JSON.parse(readFileSync(join(import.meta.dirname, "..", dir, "testdata", name), "utf8"));
const generator = () => recording("analysis", "aa-busy-vm.json");
const host = () => recording("support", "host-result-same-build.json");

/** A result of two request classes whose slices count what their classes do, as the generator's. */
function classes(): LoadgenResult {
  const values = (n: number, us: number) => Array.from({ length: n }, (_, i) => us + i);
  const r = resultWithClasses(
    ["/work", "/report"].map((path, c) => ({
      request: { method: "GET", path, weight: 1 },
      pairs: Array.from({ length: 3 }, () => ({ champion: values(40 + c, 900), challenger: values(40 + c, 950) })),
    })),
  );
  for (const s of r.slices) {
    s.completed = s.ok = s.recorded = s.sent = s.scheduled = s.classes!.reduce((n, c) => n + c.completed, 0);
  }
  return r;
}

describe("a result's fields together", () => {
  it("hold for the recordings, a generator's and a host's, and for a result of request classes", () => {
    expect(resultInconsistency(generator())).toBeUndefined();
    expect(resultInconsistency(host())).toBeUndefined();
    expect(classes().slices[0]!.classes).toHaveLength(2);
    expect(resultInconsistency(classes())).toBeUndefined();
  });

  const cases: [string, (r: LoadgenResult) => void, RegExp][] = [
    ["a slice out of place", (r) => r.slices.splice(1, 1), /^slices\[1\]\.index: 2, but it is slice 1/],
    [
      "a pair index past its slice",
      (r) => (r.slices[3]!.pair = 7),
      /^slices\[3\]\.pair: 7, but slice 3 belongs to pair 1$/,
    ],
    [
      "an arm the order does not name",
      (r) => (r.slices[0]!.arm = r.order[1]!),
      /^slices\[0\]\.arm: .*the run's order measures the/,
    ],
    [
      "an order that measures one arm twice",
      (r) => (r.order[1] = r.order[0]!),
      /^order: pair 0 measures the (champion|challenger) twice$/,
    ],
    [
      "an order the plan's pairs do not make",
      (r) => r.order.push("champion", "challenger"),
      /^order: \d+ slices, but the plan's \d+ pairs make/,
    ],
    [
      "more slices than the order",
      (r) => {
        r.plan.pairs = 1;
        r.order = r.order.slice(0, 2);
      },
      /^slices: \d+, more than the 2 of the run's order$/,
    ],
    [
      "an end before its start",
      (r) => (r.slices[2]!.end = "2020-01-01T00:00:00Z"),
      /^slices\[2\]\.start, end: .* is not a span of time$/,
    ],
    ["a start that is no time", (r) => (r.slices[2]!.start = "yesterday"), /^slices\[2\]\.start, end: "yesterday"/],
    ["a run's end that is no time", (r) => (r.ended = "later"), /^ended: "later" is not a time$/],
    [
      "more ok than completed",
      (r) => (r.slices[4]!.ok += 1),
      /^slices\[4\]\.completed: \d+ requests, but \d+ ok and 0 errors add up to/,
    ],
    [
      "errors that were never counted as finished",
      (r) => (r.slices[4]!.errors.timeout = 5),
      /^slices\[4\]\.completed: .* and 5 errors/,
    ],
    [
      "more recorded than completed",
      (r) => (r.slices[5]!.recorded = r.slices[5]!.completed + 1),
      /^slices\[5\]\.recorded: /,
    ],
    [
      "more completed than sent",
      (r) => (r.slices[6]!.sent = r.slices[6]!.completed - 1),
      /^slices\[6\]\.completed: \d+ requests, more than the \d+ sent$/,
    ],
    [
      "more sent than scheduled",
      (r) => (r.slices[6]!.scheduled = r.slices[6]!.sent - 1),
      /^slices\[6\]\.sent: \d+ requests and 0 overflowed, more than/,
    ],
  ];
  for (const [what, edit, message] of cases) {
    it(`refuses ${what}, naming the field`, () => {
      const r = generator();
      edit(r);
      expect(resultInconsistency(r)).toMatch(message);
      expect(() => parseResult("run.json", r)).toThrow(/^run\.json: not a load generator result: /);
    });
  }

  it("takes a run whose wall clock stepped back while it ran (its slices' times are monotonic)", () => {
    const r = generator();
    r.ended = "2020-01-01T00:00:00Z";
    expect(resultInconsistency(r)).toBeUndefined();
  });

  it("refuses request classes that do not add up to their slice, or are not the plan's", () => {
    let r = classes();
    r.slices[0]!.classes![1]!.completed += 1;
    r.slices[0]!.classes![1]!.ok += 1;
    expect(resultInconsistency(r)).toMatch(/^slices\[0\]\.classes: their completed add up to \d+, the slice's is \d+$/);
    r = classes();
    r.slices[0]!.classes!.pop();
    expect(resultInconsistency(r)).toBe("slices[0].classes: 1, but the plan has 2 requests");
    r = classes();
    r.slices[1]!.classes![0]!.recorded = r.slices[1]!.classes![0]!.completed + 1;
    expect(resultInconsistency(r)).toMatch(/^slices\[1\]\.classes\[0\]\.recorded: /);
  });
});
