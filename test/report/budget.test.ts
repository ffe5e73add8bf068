// The budget in words: the check's title, the report's sentence and its note carry the numbers.
import { describe, expect, it } from "vitest";
import { withBudget } from "../../src/analysis/budget";
import { analyze, defaultSettings } from "../../src/analysis/verdict";
import { budgetNotes } from "../../src/report/budget";
import { gateOutcome } from "../../src/report/gate-outcome";
import { verdictLines } from "../../src/report/lines";
import { markdownReport } from "../../src/report/markdown";
import { makeResult, pairsFromDiffs } from "../analysis/fixtures";
import { HistoryBuilder, shaOf } from "../support/history";

// +0.04 ms on a 10 ms level: +0.4%, a red far under the 2 ms threshold.
const red = analyze(
  [
    {
      name: "pr-1",
      result: makeResult({
        workload: "work",
        pairs: pairsFromDiffs([0.041, 0.039, 0.04, 0.042, 0.038, 0.04, 0.041, 0.039, 0.04, 0.04]),
        builds: { kind: "ab", champion_sha: shaOf(1), challenger_sha: shaOf(2), base: "champion" },
      }),
    },
  ],
  { ...defaultSettings, bootstrapResamples: 200 },
);
const history = new HistoryBuilder()
  .promote(shaOf(1))
  .after(5)
  .merge({ estimateMs: 0.04 })
  .after(5)
  .merge({ estimateMs: 0.04 })
  .build();

describe("a red past the regression budget", () => {
  const past = withBudget(red, history, 1);

  it("fails the check with the numbers in its title", () => {
    const o = gateOutcome(past);
    expect(o.conclusion).toBe("failure");
    expect(o.title).toMatch(
      /^red, blocking \(past the regression budget: this change \+0\.4\d%, main \+0\.80% in 30 days, budget 1%\): challenger is /,
    );
  });

  it("says why it blocks in the report, and the terminal names the reason", () => {
    const md = markdownReport(past, { notes: budgetNotes(past) });
    expect(md).toMatch(
      /\*\*Blocks the merge:\*\* the regression would take main past its monthly regression budget \(this change \+0\.4\d%, main \+0\.80% in 30 days, budget 1%\)/,
    );
    expect(md).toContain("**Regression budget**: this change");
    expect(md).toContain("**past it: blocks the merge**");
    expect(verdictLines(past)[0]).toMatch(/^RED \(blocking: budget\): /);
  });

  it("within the budget, the same red stays advisory and the note says where main stands", () => {
    const within = withBudget(red, history, 2);
    expect(gateOutcome(within).conclusion).toBe("neutral");
    expect(budgetNotes(within)).toEqual([
      expect.stringMatching(
        /^\*\*Regression budget\*\*: this change \+0\.4\d%, main \+0\.80% in 30 days, budget 2%; within it\.$/,
      ),
    ]);
  });
});
