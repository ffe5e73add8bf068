// The monthly regression budget (budget.percent_per_30_days; docs/design/0024-regression-budget.md):
// advisory reds merge by design, so main can drift by many small steps that each passed. A red
// that would take main's change over the trailing 30 days past the budget blocks like a red
// past the threshold, with the numbers; a green pays back. Pure.
import type { BudgetAccount, History } from "../contract/history";
import { compounded, type MainChange, mainChange } from "./main-history";
import { type Analysis, type Comparison, headlineOf } from "./verdict";

/** A comparison's change in percent of main's level (the champion arm's latency at the percentile). */
export function changePercent(c: Comparison): number {
  return (100 * c.estimateMs) / c.champion.sloMs;
}

/** The budget's account of one comparison against main's change so far. */
export function budgetAccount(
  c: Comparison,
  main: Pick<MainChange, "percent" | "drift">,
  limitPercent: number,
): BudgetAccount {
  const change = changePercent(c);
  return {
    limit_percent: limitPercent,
    main_percent: main.percent,
    basis: main.drift ? "drift" : "steps",
    change_percent: change,
    exceeded: c.verdict === "red" && compounded([main.percent, change]) > limitPercent,
  };
}

/**
 * The analysis with every comparison's budget account: a red that would take main past the
 * limit blocks (reason "budget"). `now` is the host's clock (the history's time), so the window
 * is the host's 30 days.
 */
export function withBudget(a: Analysis, history: History, limitPercent: number): Analysis {
  const now = Date.parse(history.time);
  const comparisons = a.comparisons.map((c): Comparison => {
    // A drift run that cannot resolve the budget's size is set aside for the steps alone.
    const main = mainChange(history, c.key, a.percentile, now, { maxDriftHalfWidthPercent: limitPercent });
    const budget = budgetAccount(c, main, limitPercent);
    if (!budget.exceeded) return { ...c, budget };
    return { ...c, budget, blocking: true, blockedBy: [...c.blockedBy, "budget"] };
  });
  return { ...a, comparisons, headline: headlineOf(comparisons), blocking: comparisons.some((c) => c.blocking) };
}
