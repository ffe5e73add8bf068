// Main over time from the host's history: the steps promotions took, drift runs beside the steps
// they span, main's change over 30 days, change points, and the budget that keeps it.
import { describe, expect, it } from "vitest";
import { budgetAccount, withBudget } from "../../src/analysis/budget";
import { gateRecord as recordOf } from "../../src/analysis/gate-record";
import {
  changePoints,
  driftAncestor,
  driftPoints,
  historyChangePoints,
  mainChange,
  mainSteps,
} from "../../src/analysis/main-history";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { gateRecordSchema } from "../../src/contract/history";
import { keySeries } from "../../src/report/history-series";
import { DAY, HistoryBuilder, shaOf, T0 } from "../support/history";
import { makeResult, pairsFromDiffs } from "./fixtures";

const KEY = "work@1000";

describe("main's steps", () => {
  it("are the promoted pull requests' last verdicts: a red's or green's estimate in percent of main's level, a grey's 0", () => {
    const h = new HistoryBuilder()
      .promote(shaOf(1))
      .after(1)
      .merge({ estimateMs: 0.05 }) // red on a 10 ms level: +0.5%
      .after(1)
      .merge({ estimateMs: -0.2 }) // green: −2%
      .after(1)
      .merge({ estimateMs: 0.03, halfMs: 0.2 }) // grey: its estimate is noise
      .build();
    const steps = mainSteps(h.entries, KEY, 99);
    expect(steps.map((s) => [s.kind, s.gate?.comparison.verdict ?? null, s.percent])).toEqual([
      ["promotion", null, 0],
      ["promotion", "red", expect.closeTo(0.5, 9)],
      ["promotion", "green", expect.closeTo(-2, 9)],
      ["promotion", "grey", 0],
    ]);
    expect(steps[1]!.pullRequest).toBe(1);
    // Another percentile or workload has no steps of these gates.
    expect(mainSteps(h.entries, KEY, 90).every((s) => s.gate === null)).toBe(true);
    expect(mainSteps(h.entries, "other@1000", 99).every((s) => s.percent === 0)).toBe(true);
  });

  it("a rollback undoes the step of the champion it rolls back from", () => {
    const h = new HistoryBuilder().promote(shaOf(1)).after(1).merge({ estimateMs: 0.05 }).after(1).rollback().build();
    const steps = mainSteps(h.entries, KEY, 99);
    expect(steps.at(-1)).toMatchObject({ kind: "rollback", sha: shaOf(1) });
    // Back to the level before +0.5%: −0.5/1.005 % of the level after it.
    expect(steps.at(-1)!.percent).toBeCloseTo(-0.5 / 1.005, 9);
    expect(mainChange(h, KEY, 99, Date.parse(h.time)).percent).toBeCloseTo(0, 9);
  });
});

describe("main's level on the history page", () => {
  it("comes back to 0 after a rollback, which says it undoes the step it rolled back", () => {
    const h = new HistoryBuilder()
      .promote(shaOf(1))
      .after(1)
      .merge({ estimateMs: 2, championMs: 8, thresholdMs: 5 }) // 8 ms → 10 ms: +25%
      .after(1)
      .rollback()
      .build();
    const level = keySeries(h, KEY, 99).level;
    const rolledBack = level.labels.findLastIndex((l) => l.includes("rollback to"));
    expect(level.columns.main![rolledBack]).toBeCloseTo(0, 9);
    expect(level.labels[rolledBack]).toMatch(/undoes \+25\.00%; main [+−]0\.00%$/);
  });
});

/** Steps in percent of the level before each, taken together, as main's level moves. */
const together = (...percents: number[]) => 100 * (percents.reduce((f, p) => f * (1 + p / 100), 1) - 1);

describe("main's change over 30 days", () => {
  it("is the window's steps, compounded, when no drift was measured; older steps fall out of it", () => {
    const b = new HistoryBuilder().promote(shaOf(1)).after(1).merge({ estimateMs: 0.04 }); // day 1: +0.4%, falls out
    b.after(10).merge({ estimateMs: 0.03 }).after(10).merge({ estimateMs: -0.1 }).after(10).merge({ estimateMs: 0.05 });
    const h = b.after(5).build(); // now: day 36
    const c = mainChange(h, KEY, 99, Date.parse(h.time));
    expect(c.drift).toBeNull();
    expect(c.steps).toHaveLength(3);
    expect(c.percent).toBeCloseTo(together(0.3, -1, 0.5), 9);
  });

  it("is 0 when a green takes main back to its level: the steps compound, each in percent of the level before it", () => {
    // 8 ms → 10 ms (+25%) → 8 ms (−20%): summed, the two would leave main +5%, a change undone.
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(1)
      .merge({ estimateMs: 2, championMs: 8, thresholdMs: 5 })
      .after(1)
      .merge({ estimateMs: -2, championMs: 10 });
    const h = b.after(1).build();
    expect(mainSteps(h.entries, KEY, 99).map((s) => s.percent)).toEqual([
      0,
      expect.closeTo(25, 9),
      expect.closeTo(-20, 9),
    ]);
    expect(mainChange(h, KEY, 99, Date.parse(h.time)).percent).toBeCloseTo(0, 9);
  });

  it("starts from the latest drift run in the window and adds only the steps after it", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(31).merge({ estimateMs: 0.02 }).after(1).merge({ estimateMs: 0.02 });
    b.after(1).drift(shaOf(1), 0.09, 0.01); // measured: +0.9% since the ancestor (the steps said +0.4%)
    b.after(1).merge({ estimateMs: 0.03 });
    const h = b.after(1).build();
    const c = mainChange(h, KEY, 99, Date.parse(h.time));
    expect(c.drift?.percent).toBeCloseTo(0.9, 9);
    expect(c.steps).toHaveLength(1);
    expect(c.percent).toBeCloseTo(together(0.9, 0.3), 9);
    // The drift run beside the steps it spans.
    const [d] = driftPoints(h, KEY, 99);
    expect(d!.steps).toHaveLength(2);
    expect(d!.stepsPercent).toBeCloseTo(together(0.2, 0.2), 9);
    expect(d!.ciPercent[0]).toBeCloseTo(0.8, 9);
    expect(d!.ancestorSince).toBe(T0);
  });
});

describe("a drift run too wide for the budget", () => {
  it("is set aside: its interval cannot tell a change of the budget's size, so the steps alone count", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(31).merge({ estimateMs: 0.02 }).after(1).drift(shaOf(1), 0.05, 0.5); // +0.5% ± 5%
    b.after(1).merge({ estimateMs: 0.03 });
    const h = b.after(1).build();
    const now = Date.parse(h.time);
    expect(mainChange(h, KEY, 99, now).drift).not.toBeNull();
    const set = mainChange(h, KEY, 99, now, { maxDriftHalfWidthPercent: 1 });
    expect(set.drift).toBeNull();
    expect(set.setAside?.percent).toBeCloseTo(0.5, 9);
    expect(set.percent).toBeCloseTo(together(0.2, 0.3), 9);
  });
});

describe("a drift run's span", () => {
  it("starts after the change that made the ancestor champion, however the host dated its reign", () => {
    const b = new HistoryBuilder().promote(shaOf(1)).after(3).merge({ estimateMs: 0.02 });
    const ancestor = b.champion;
    b.after(31).merge({ estimateMs: 0.03 }).after(1).drift(ancestor, 0.04, 0.01);
    const h = b.build();
    // The host stamps a reign a moment before the promotion's own entry.
    const early = {
      ...h,
      ancestors: h.ancestors.map((a) =>
        a.sha === ancestor ? { ...a, since: new Date(Date.parse(a.since) - 1000).toISOString() } : a,
      ),
    };
    for (const history of [h, early]) {
      const [d] = driftPoints(history, KEY, 99);
      expect(d!.steps.map((s) => s.sha)).toEqual([h.champion]);
      expect(d!.stepsPercent).toBeCloseTo(0.3, 9);
    }
  });
});

describe("the drift ancestor", () => {
  it("is the newest kept champion promoted 30 or more days before the history's time, never the champion itself", () => {
    const b = new HistoryBuilder().promote(shaOf(1)).after(10).promote(shaOf(2)).after(15).promote(shaOf(3));
    expect(driftAncestor(b.after(4).build())).toBeNull(); // day 29: none that old
    expect(driftAncestor(b.after(2).build())?.sha).toBe(shaOf(1)); // day 31
    expect(driftAncestor(b.after(10).build())?.sha).toBe(shaOf(2)); // day 41
    // The champion older than 30 days: main has not changed since, nothing to measure.
    expect(driftAncestor(b.after(30).build())).toBeNull();
  });
});

describe("change points", () => {
  it("calls out several advisory reds in a row that cross the threshold together, none alone", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    for (const e of [0.3, 0.4, 0.35]) b.after(2).merge({ estimateMs: e, thresholdMs: 1 });
    b.after(2).merge({ estimateMs: -0.5 }); // a green ends the run
    b.after(2).merge({ estimateMs: 0.4 }).after(2).merge({ estimateMs: 0.4 }); // 0.8 ms: under the threshold
    const h = b.build();
    const points = changePoints(mainSteps(h.entries, KEY, 99), KEY, 99);
    expect(points).toHaveLength(1);
    expect(points[0]!.steps.map((s) => s.pullRequest)).toEqual([1, 2, 3]);
    expect(points[0]!.sumMs).toBeCloseTo(1.05, 9);
    expect(historyChangePoints(h)).toHaveLength(1);
  });

  it("never calls out a run that one blocking red crossed by itself, or greys", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(1)
      .merge({ estimateMs: 0.6 })
      .after(1)
      .merge({ estimateMs: 1.5, blocking: true })
      .after(1)
      .merge({ estimateMs: 0.6 });
    b.after(1).merge({ estimateMs: 0.6, halfMs: 1 }).after(1).merge({ estimateMs: 0.6, halfMs: 1 });
    expect(historyChangePoints(b.build())).toEqual([]);
  });
});

describe("the regression budget", () => {
  const analysed = (dMs: number[]) =>
    analyze(
      [
        {
          name: "pr-1",
          result: makeResult({
            workload: "work",
            pairs: pairsFromDiffs(dMs),
            builds: { kind: "ab", champion_sha: shaOf(1), challenger_sha: shaOf(2), base: "champion" },
          }),
        },
      ],
      { ...defaultSettings, bootstrapResamples: 200 },
    );
  // +0.04 ms on a 10 ms level: +0.4%, a red well under the 2 ms threshold.
  const red = analysed([0.041, 0.039, 0.04, 0.042, 0.038, 0.04, 0.041, 0.039, 0.04, 0.04]);
  const green = analysed([-0.041, -0.039, -0.04, -0.042, -0.038, -0.04, -0.041, -0.039, -0.04, -0.04]);

  it("blocks the red that would take main past it, with the numbers", () => {
    expect(red.verdict).toBe("red");
    expect(red.blocking).toBe(false);
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(5).merge({ estimateMs: 0.04 }).after(5).merge({ estimateMs: 0.04 }); // main +0.8%
    const within = withBudget(red, b.build(), 1.5);
    expect(within.blocking).toBe(false);
    expect(within.headline.budget).toMatchObject({ limit_percent: 1.5, exceeded: false, basis: "steps" });
    const past = withBudget(red, b.build(), 1);
    expect(past.blocking).toBe(true);
    expect(past.headline.blockedBy).toEqual(["budget"]);
    expect(past.headline.budget!.main_percent).toBeCloseTo(together(0.4, 0.4), 9);
    expect(past.headline.budget!.change_percent).toBeCloseTo(0.4, 1);
  });

  it("a green pays back, and a green is never blocked", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(5).merge({ estimateMs: 0.04 }).after(5).merge({ estimateMs: 0.04 }).after(5).merge({ estimateMs: -0.05 }); // +0.3%
    expect(withBudget(red, b.build(), 1).blocking).toBe(false);
    expect(budgetAccount(green.headline, { percent: 5, drift: null }, 1).exceeded).toBe(false);
  });

  it("a step older than 30 days no longer counts", () => {
    const b = new HistoryBuilder().promote(shaOf(1));
    b.after(1).merge({ estimateMs: 0.04 }).after(1).merge({ estimateMs: 0.04 });
    expect(withBudget(red, b.after(10).build(), 1).blocking).toBe(true);
    expect(withBudget(red, b.after(25).build(), 1).blocking).toBe(false);
  });

  it("is part of the gate's record, which the host's contract accepts", () => {
    const b = new HistoryBuilder().promote(shaOf(1)).after(5).merge({ estimateMs: 0.08 });
    const past = withBudget(red, b.build(), 1);
    const record = recordOf(past, [], { pullRequest: 7, url: "https://github.com/o/r/actions/runs/1" });
    expect(gateRecordSchema.parse(record)).toEqual(record);
    expect(record).toMatchObject({
      pull_request: 7,
      verdict: "red",
      blocking: true,
      comparisons: [{ blocked_by: ["budget"], budget: { exceeded: true } }],
    });
    // A URL that could break out of a page's attribute is left out, not passed on.
    expect(recordOf(past, [], { url: 'https://x/"><script>' }).url).toBeUndefined();
  });
});

it("T0 and DAY are a plain calendar", () => {
  expect(new Date(T0 + 30 * DAY).toISOString()).toBe("2026-10-01T00:00:00.000Z");
});
