// Main's performance over time, per comparison (workload@rate) and percentile, from the host's
// history: the steps its promotions took (each the promoted pull request's last verdict), the
// drift measured against ancestors, and main's change over a trailing window, which the monthly
// regression budget is kept against (docs/design/0024-regression-budget.md). Pure.
import type { Ancestor, ComparisonRecord, DriftRecord, GateRecord, History, HistoryEntry } from "../contract/history";
import { comparisonKey } from "../contract/rules";

export const DAY_MS = 24 * 3600 * 1000;
/** The regression budget's window: budget.percent_per_30_days. */
export const BUDGET_WINDOW_DAYS = 30;

/** One change of main: a promotion with the step its gate measured, or a rollback undoing one. */
export interface MainStep {
  kind: "promotion" | "rollback";
  /** When main changed (ms since the epoch). */
  time: number;
  sha: string;
  previous: string | null;
  pullRequest: number | null;
  /** The gate the step is (for a rollback, the undone promotion's), when one measured it. */
  gate: { time: number; record: GateRecord; comparison: ComparisonRecord } | null;
  /**
   * What the step adds to main, in percent of main's level before it at the percentile: a red's
   * or a green's estimate (a detected change); 0 for a grey (no detected change: its estimate is
   * noise within an interval that holds 0) or a step no gate measured. A rollback's takes main
   * back to its level before the undone step.
   */
  percent: number;
  /** The same in ms. */
  ms: number;
}

/** A drift run: the champion measured against an ancestor. */
export interface DriftPoint {
  time: number;
  runId: string | null;
  record: DriftRecord;
  /** When the ancestor became champion, when the history says. */
  ancestorSince: number | null;
  /** Champion minus ancestor, in percent of the ancestor's level, and its interval. */
  percent: number;
  ciPercent: [number, number];
  /** The steps main took between the ancestor and the drift run, compounded (percent): what the gates saw. */
  stepsPercent: number;
  steps: MainStep[];
}

const time = (iso: string) => Date.parse(iso);
const percentOf = (ms: number, levelMs: number) => (100 * ms) / levelMs;

/**
 * Changes in percent, each of the level before it, taken together: they compound, so a +25%
 * step and the −20% that brings main back make 0, as main's level says. A sum would keep +5%
 * of a change undone, more the larger the steps (docs/design/0024-regression-budget.md).
 */
export function compounded(percents: Iterable<number>): number {
  let factor = 1;
  for (const p of percents) factor *= 1 + p / 100;
  return 100 * (factor - 1);
}

/**
 * The change, in percent of the level after `percent`, that takes main back to the level before
 * it; its own inverse, so a rollback's step names the step it undid.
 */
export const undoing = (percent: number) => (-100 * percent) / (100 + percent);

/** A gate's comparison at a key and percentile, if it has one. */
function comparisonAt(g: GateRecord, key: string, percentile: number): ComparisonRecord | undefined {
  return g.percentile === percentile ? g.comparisons.find((c) => comparisonKey(c.workload, c.rate) === key) : undefined;
}

/** Every comparison key and percentile the history's gates and drift runs speak of, sorted. */
export function historyKeys(h: History): { key: string; percentile: number }[] {
  const seen = new Map<string, { key: string; percentile: number }>();
  const add = (workload: string, rate: number, percentile: number) => {
    const key = comparisonKey(workload, rate);
    seen.set(`${key}/p${percentile}`, { key, percentile });
  };
  for (const e of h.entries) {
    for (const c of e.gate?.comparisons ?? []) add(c.workload, c.rate, e.gate!.percentile);
    if (e.drift) add(e.drift.workload, e.drift.rate, e.drift.percentile);
  }
  return [...seen.values()].sort((a, b) => a.key.localeCompare(b.key) || a.percentile - b.percentile);
}

/** Main's steps at a key and percentile, oldest first: every promotion and rollback. */
export function mainSteps(entries: readonly HistoryEntry[], key: string, percentile: number): MainStep[] {
  const steps: MainStep[] = [];
  for (const e of entries) {
    const c = e.change;
    if (!c || (e.kind !== "promotion" && e.kind !== "rollback")) continue;
    const base = { time: time(e.time), sha: c.sha, previous: c.previous ?? null, pullRequest: c.pull_request ?? null };
    if (e.kind === "rollback") {
      // Undoes the promotion that made the champion it rolls back from.
      const undone = steps.findLast((s) => s.kind === "promotion" && s.sha === c.previous);
      steps.push({
        kind: "rollback",
        ...base,
        gate: undone?.gate ?? null,
        percent: undoing(undone?.percent ?? 0),
        ms: -(undone?.ms ?? 0),
      });
      continue;
    }
    const comparison = c.step && comparisonAt(c.step.gate, key, percentile);
    const gate = c.step && comparison ? { time: time(c.step.gated), record: c.step.gate, comparison } : null;
    const detected = comparison !== undefined && comparison.verdict !== "grey";
    const ms = detected ? comparison.estimate_ms : 0;
    steps.push({ kind: "promotion", ...base, gate, ms, percent: detected ? percentOf(ms, comparison.champion_ms) : 0 });
  }
  return steps;
}

/** The drift runs at a key and percentile, oldest first, each with the steps it spans. */
export function driftPoints(h: History, key: string, percentile: number): DriftPoint[] {
  const steps = mainSteps(h.entries, key, percentile);
  const since = new Map(h.ancestors.map((a) => [a.sha, time(a.since)]));
  return h.entries.flatMap((e) => {
    const d = e.drift;
    if (!d || comparisonKey(d.workload, d.rate) !== key || d.percentile !== percentile) return [];
    const t = time(e.time);
    // The ancestor's reign began with the change that made it champion (its promotion, or a
    // rollback to it); the steps after that change are the ones the drift run spans. A history
    // that no longer holds that change dates it by the host's ancestors.
    const made = steps.findLastIndex((s) => s.sha === d.ancestor_sha && s.time <= t);
    const from = made >= 0 ? steps[made]!.time : (since.get(d.ancestor_sha) ?? null);
    const between =
      made >= 0
        ? steps.slice(made + 1).filter((s) => s.time <= t)
        : from === null
          ? []
          : steps.filter((s) => s.time > from && s.time <= t);
    return [
      {
        time: t,
        runId: e.run_id ?? null,
        record: d,
        ancestorSince: from,
        percent: percentOf(d.estimate_ms, d.ancestor_ms),
        ciPercent: [percentOf(d.ci_ms[0], d.ancestor_ms), percentOf(d.ci_ms[1], d.ancestor_ms)],
        stepsPercent: compounded(between.map((s) => s.percent)),
        steps: between,
      },
    ];
  });
}

/** Main's change over the trailing window at a moment, and what it rests on. */
export interface MainChange {
  percent: number;
  /** The latest drift run in the window, which the change starts from; null when there was none (or it was set aside). */
  drift: DriftPoint | null;
  /** A drift run in the window set aside: its interval was wider than maxDriftHalfWidthPercent. */
  setAside: DriftPoint | null;
  /** The steps since that drift run (or in the whole window, without one). */
  steps: MainStep[];
  windowDays: number;
}

/**
 * Main's change over the `windowDays` before `now`: the latest drift run measured in the window
 * (a paired interval against the ancestor of 30 or more days before it), then every step since;
 * without one, the window's steps; compounded. A green's step is negative: it pays back. A drift
 * run whose interval is wider than `maxDriftHalfWidthPercent` either way cannot tell a change of
 * that size and is set aside (the budget passes its limit here).
 */
export function mainChange(
  h: History,
  key: string,
  percentile: number,
  now: number,
  o: { windowDays?: number; maxDriftHalfWidthPercent?: number } = {},
): MainChange {
  const windowDays = o.windowDays ?? BUDGET_WINDOW_DAYS;
  const start = now - windowDays * DAY_MS;
  const latest = driftPoints(h, key, percentile).findLast((d) => d.time > start && d.time <= now) ?? null;
  const tooWide =
    latest !== null &&
    o.maxDriftHalfWidthPercent !== undefined &&
    (latest.ciPercent[1] - latest.ciPercent[0]) / 2 > o.maxDriftHalfWidthPercent;
  const drift = tooWide ? null : latest;
  const from = drift?.time ?? start;
  const steps = mainSteps(h.entries, key, percentile).filter((s) => s.time > from && s.time <= now);
  return {
    percent: compounded([drift?.percent ?? 0, ...steps.map((s) => s.percent)]),
    drift,
    setAside: tooWide ? latest : null,
    steps,
    windowDays,
  };
}

/** Several small reds in a row that together moved main past the block threshold, though none did alone. */
export interface ChangePoint {
  key: string;
  percentile: number;
  steps: MainStep[];
  /**
   * The steps' estimates summed, in ms (what the threshold, in ms, is held against), and their
   * percents summed as the ms are: what the reds add up to, not main's change, which compounds
   * (mainChange: three +5% steps are +15.76% of main, their sum +15%).
   */
  sumMs: number;
  sumPercent: number;
  thresholdMs: number;
}

/**
 * The change points of one key's steps: each longest run of two or more consecutive promotions
 * whose gates were red and advisory (each below the block threshold) and whose estimates add up
 * to the threshold or more. A green, a grey, a blocking red or a rollback ends a run.
 */
export function changePoints(steps: readonly MainStep[], key: string, percentile: number): ChangePoint[] {
  const out: ChangePoint[] = [];
  let run: MainStep[] = [];
  const close = () => {
    const sumMs = run.reduce((sum, s) => sum + s.ms, 0);
    const thresholdMs = run.at(-1)?.gate?.comparison.threshold_ms ?? Number.POSITIVE_INFINITY;
    if (run.length >= 2 && sumMs >= thresholdMs) {
      out.push({
        key,
        percentile,
        steps: run,
        sumMs,
        sumPercent: run.reduce((sum, s) => sum + s.percent, 0),
        thresholdMs,
      });
    }
    run = [];
  };
  for (const s of steps) {
    const c = s.gate?.comparison;
    if (s.kind === "promotion" && c?.verdict === "red" && !c.blocking) run.push(s);
    else close();
  }
  close();
  return out;
}

/**
 * The default ancestor of a drift run at the history's time: the newest kept champion promoted
 * at least `ageDays` before it (the host keeps one per week, so 30 to 37 days), other than the
 * champion itself (a champion that old means main has not changed since). Null when there is none.
 */
export function driftAncestor(h: History, ageDays = BUDGET_WINDOW_DAYS): Ancestor | null {
  const latest = Date.parse(h.time) - ageDays * DAY_MS;
  const newest = h.ancestors
    .filter((a) => Date.parse(a.since) <= latest)
    .sort((a, b) => Date.parse(b.since) - Date.parse(a.since))[0];
  return newest && newest.sha !== h.champion ? newest : null;
}

/** Every change point of the history, over all its keys, oldest first. */
export function historyChangePoints(h: History): ChangePoint[] {
  return historyKeys(h)
    .flatMap(({ key, percentile }) => changePoints(mainSteps(h.entries, key, percentile), key, percentile))
    .sort((a, b) => a.steps[0]!.time - b.steps[0]!.time);
}
