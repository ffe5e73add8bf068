// The monthly regression budget in words (docs/design/0024-regression-budget.md). Pure.

import type { Analysis } from "../analysis/verdict";
import type { BudgetAccount } from "../contract/history";

const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}%`;

/** "this change +0.40%, main +0.80% in 30 days, budget 1%": the account in words. */
export function budgetWords(b: BudgetAccount): string {
  return `this change ${signed(b.change_percent)}, main ${signed(b.main_percent)} in 30 days${b.basis === "drift" ? " (measured by the latest drift run, and the steps since)" : ""}, budget ${b.limit_percent}%`;
}

/** A report line per comparison with a budget account: where main stands against its budget. */
export function budgetNotes(a: Analysis): string[] {
  return a.comparisons.flatMap((c) => {
    if (!c.budget) return [];
    const where = a.comparisons.length > 1 ? ` (${c.key})` : "";
    const verdict = c.budget.exceeded
      ? "**past it: blocks the merge**"
      : c.verdict === "red"
        ? "within it"
        : c.verdict === "green"
          ? "a green pays back"
          : "no detected change";
    return [`**Regression budget**${where}: ${budgetWords(c.budget)}; ${verdict}.`];
  });
}
