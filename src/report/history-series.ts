// The history page's charts as data: per comparison key and percentile, main's level over time
// (the steps compounded, the drift runs measured), every gate's interval against the floor and the
// block threshold, and main's 30-day change against the budget. Aligned arrays, as uPlot takes
// them: one x (seconds) per chart, null where a series has no point. Pure.
import {
  BUDGET_WINDOW_DAYS,
  compounded,
  type DriftPoint,
  driftPoints,
  type MainStep,
  mainChange,
  mainSteps,
  undoing,
} from "../analysis/main-history";
import type { History } from "../contract/history";
import { comparisonKey } from "../contract/rules";
import { ms, signedMs } from "./format";

type Column = (number | null)[];

export interface Chart {
  x: number[];
  /** Named columns, each as long as x. */
  columns: Record<string, Column>;
  /** What hovering each x says. */
  labels: string[];
}

export interface KeySeries {
  /** A DOM-safe id: work-1000-p99. */
  id: string;
  key: string;
  percentile: number;
  level: Chart;
  gates: Chart;
  budget: Chart & { limitPercent: number | null };
}

const sec = (t: number) => t / 1000;
const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(2)}%`;
const day = (t: number) => new Date(t).toISOString().slice(0, 16).replace("T", " ");
const who = (s: { pullRequest: number | null; sha: string }) =>
  s.pullRequest ? `#${s.pullRequest} (${s.sha.slice(0, 7)})` : s.sha.slice(0, 7);

/** Joins events into one x axis: each event's time gets an index; simultaneous events are nudged apart by a millisecond. */
function axis<T>(events: readonly { time: number; event: T }[]): { x: number[]; at: { index: number; event: T }[] } {
  const sorted = [...events].sort((a, b) => a.time - b.time);
  const x: number[] = [];
  let last = Number.NEGATIVE_INFINITY;
  const at = sorted.map((e) => {
    const t = Math.max(e.time, last + 1);
    last = t;
    x.push(sec(t));
    return { index: x.length - 1, event: e.event };
  });
  return { x, at };
}

const column = (n: number): Column => new Array(n).fill(null);

/** Main's level, in percent of the first champion's: the steps compounded, and each drift run anchored at its ancestor's level. */
function levelChart(steps: readonly MainStep[], drifts: readonly DriftPoint[]): Chart {
  type Ev = { kind: "step"; s: MainStep } | { kind: "drift"; d: DriftPoint };
  const { x, at } = axis<Ev>([
    ...steps.map((s) => ({ time: s.time, event: { kind: "step" as const, s } })),
    ...drifts.map((d) => ({ time: d.time, event: { kind: "drift" as const, d } })),
  ]);
  const cols = {
    main: column(x.length),
    promoted: column(x.length),
    drift: column(x.length),
    driftLow: column(x.length),
    driftHigh: column(x.length),
  };
  const labels: string[] = new Array(x.length).fill("");
  // Main's level at a time: every step up to it.
  const levelAt = (t: number) => compounded(steps.filter((s) => s.time <= t).map((s) => s.percent));
  for (const { index, event } of at) {
    if (event.kind === "step") {
      const s = event.s;
      const level = levelAt(s.time);
      cols.main[index] = level;
      cols.promoted[index] = level;
      const gate = s.gate
        ? `${s.gate.comparison.verdict} ${signedMs(s.gate.comparison.estimate_ms)} ms (${pct(s.percent)})`
        : "no gate on this host";
      labels[index] =
        `${day(s.time)} ${s.kind === "rollback" ? "rollback to" : "promoted"} ${who(s)}: ${s.kind === "rollback" ? `undoes ${pct(undoing(s.percent))}` : gate}; main ${pct(level)}`;
      continue;
    }
    const d = event.d;
    const base = d.ancestorSince === null ? null : levelAt(d.ancestorSince);
    cols.main[index] = levelAt(d.time);
    if (base !== null) {
      cols.drift[index] = compounded([base, d.percent]);
      cols.driftLow[index] = compounded([base, d.ciPercent[0]]);
      cols.driftHigh[index] = compounded([base, d.ciPercent[1]]);
    }
    labels[index] =
      `${day(d.time)} drift since ${d.record.ancestor_sha.slice(0, 7)}: ${signedMs(d.record.estimate_ms)} ms [${signedMs(d.record.ci_ms[0])}, ${signedMs(d.record.ci_ms[1])}] (${pct(d.percent)}); the ${d.steps.length} steps between make ${pct(d.stepsPercent)}`;
  }
  return { x, columns: cols, labels };
}

/** Every gate's estimate and interval by verdict, the floor (±) as calibrated, the block threshold, and the reds that were merged. */
function gatesChart(h: History, key: string, percentile: number, steps: readonly MainStep[]): Chart {
  type Ev = { kind: "gate"; i: number } | { kind: "floor"; i: number };
  const events: { time: number; event: Ev }[] = [];
  h.entries.forEach((e, i) => {
    const t = Date.parse(e.time);
    if (e.gate?.percentile === percentile && e.gate.comparisons.some((c) => comparisonKey(c.workload, c.rate) === key))
      events.push({ time: t, event: { kind: "gate", i } });
    const f = e.calibration;
    if (f && f.percentile === percentile && comparisonKey(f.workload, f.rate) === key)
      events.push({ time: t, event: { kind: "floor", i } });
  });
  const { x, at } = axis(events);
  const names = ["green", "grey", "red", "merged", "low", "high", "floor", "floorNegative", "threshold"] as const;
  const cols = Object.fromEntries(names.map((n) => [n, column(x.length)])) as Record<(typeof names)[number], Column>;
  const labels: string[] = new Array(x.length).fill("");
  const mergedRuns = new Set(
    steps.flatMap((s) =>
      s.kind === "promotion" && s.gate?.comparison.verdict === "red" ? [s.gate.record.runs[0]] : [],
    ),
  );
  let floor: number | null = null;
  let threshold: number | null = null;
  for (const { index, event } of at) {
    const e = h.entries[event.i]!;
    if (event.kind === "floor") {
      floor = e.calibration!.half_width_ms;
      labels[index] = `${day(Date.parse(e.time))} A/A floor ±${ms(floor)} ms (${e.run_id ?? "calibration"})`;
    } else {
      const g = e.gate!;
      const c = g.comparisons.find((x) => comparisonKey(x.workload, x.rate) === key)!;
      threshold = c.threshold_ms;
      cols[c.verdict][index] = c.estimate_ms;
      cols.low[index] = c.ci_ms[0];
      cols.high[index] = c.ci_ms[1];
      const merged = mergedRuns.has(g.runs[0]);
      if (merged) cols.merged[index] = c.estimate_ms;
      const state = c.blocking ? `${c.verdict}, blocking` : c.verdict;
      labels[index] =
        `${day(Date.parse(e.time))} ${g.pull_request ? `#${g.pull_request} ` : ""}${g.challenger_sha.slice(0, 7)}: ${state} ${signedMs(c.estimate_ms)} ms [${signedMs(c.ci_ms[0])}, ${signedMs(c.ci_ms[1])}], n=${c.pairs}${merged ? "; merged" : ""}`;
    }
    cols.floor[index] = floor;
    cols.floorNegative[index] = floor === null ? null : -floor;
    cols.threshold[index] = threshold;
  }
  return { x, columns: cols, labels };
}

/** Main's change over the trailing 30 days at each promotion, drift run and gate, and the budget's limit. */
function budgetChart(
  h: History,
  key: string,
  percentile: number,
  steps: readonly MainStep[],
  drifts: readonly DriftPoint[],
): KeySeries["budget"] {
  const gateTimes = h.entries
    .filter((e) => e.gate?.comparisons.some((c) => comparisonKey(c.workload, c.rate) === key))
    .map((e) => Date.parse(e.time));
  const times = [
    ...new Set([...steps.map((s) => s.time), ...drifts.map((d) => d.time), ...gateTimes, Date.parse(h.time)]),
  ];
  const { x, at } = axis(times.map((time) => ({ time, event: time })));
  const main = column(x.length);
  const labels: string[] = new Array(x.length).fill("");
  for (const { index, event } of at) {
    const c = mainChange(h, key, percentile, event);
    main[index] = c.percent;
    labels[index] =
      `${day(event)} main ${pct(c.percent)} over ${BUDGET_WINDOW_DAYS} days (${c.drift ? `drift run ${pct(c.drift.percent)}, then ` : ""}${c.steps.length} steps, compounded)`;
  }
  // The budget the latest gate of this key kept, if any set one.
  const limits = h.entries.flatMap(
    (e) =>
      e.gate?.comparisons
        .filter((c) => comparisonKey(c.workload, c.rate) === key && c.budget)
        .map((c) => c.budget!.limit_percent) ?? [],
  );
  const limitPercent = limits.at(-1) ?? null;
  return { x, columns: { main, limit: x.map(() => limitPercent) }, labels, limitPercent };
}

/** The charts of one key and percentile. */
export function keySeries(h: History, key: string, percentile: number): KeySeries {
  const steps = mainSteps(h.entries, key, percentile);
  const drifts = driftPoints(h, key, percentile);
  return {
    id: `${key}-p${percentile}`.replace(/[^A-Za-z0-9_-]/g, "-"),
    key,
    percentile,
    level: levelChart(steps, drifts),
    gates: gatesChart(h, key, percentile, steps),
    budget: budgetChart(h, key, percentile, steps, drifts),
  };
}
