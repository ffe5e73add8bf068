// Histories built by hand, as perf-host writes them, for the pure tests of the budget, the
// change points and the page: every document is checked against the contract (parseHistory).
import { type GateRecord, type History, type HistoryEntry, parseHistory } from "../../src/contract/history";
import chromium from "./chromium.json";

export const DAY = 24 * 3600 * 1000;
export const T0 = Date.parse("2026-09-01T00:00:00Z");
export const iso = (t: number) => new Date(t).toISOString();

/** A 40-hex SHA from a small number. */
export const shaOf = (n: number) => n.toString(16).padStart(7, "0").padEnd(40, "a");

export interface Step {
  estimateMs: number;
  /** Half the interval's width (default 0.01 ms). */
  halfMs?: number;
  verdict?: "green" | "red" | "grey";
  blocking?: boolean;
  championMs?: number;
  thresholdMs?: number;
  workload?: string;
  rate?: number;
  percentile?: number;
}

/** A gate record of one comparison (work@1000 at p99 unless the step says otherwise). */
export function gateRecord(pr: number, sha: string, s: Step): GateRecord {
  const half = s.halfMs ?? 0.01;
  const verdict = s.verdict ?? (s.estimateMs - half > 0 ? "red" : s.estimateMs + half < 0 ? "green" : "grey");
  const blocking = s.blocking ?? false;
  return {
    pull_request: pr,
    challenger_sha: sha,
    champion_sha: shaOf(1),
    base: "champion",
    verdict,
    blocking,
    percentile: s.percentile ?? 99,
    comparisons: [
      {
        workload: s.workload ?? "work",
        rate: s.rate ?? 1000,
        verdict,
        blocking,
        ...(blocking ? { blocked_by: ["latency" as const] } : {}),
        estimate_ms: s.estimateMs,
        ci_ms: [s.estimateMs - half, s.estimateMs + half],
        champion_ms: s.championMs ?? 10,
        floor_ms: 0.05,
        threshold_ms: s.thresholdMs ?? 1,
        pairs: 90,
      },
    ],
    runs: [`pr${pr}-${sha.slice(0, 7)}-1-0`],
    url: `https://github.com/o/r/actions/runs/${pr}`,
  };
}

/** Builds a history entry by entry, a day apart unless told when. */
export class HistoryBuilder {
  readonly entries: HistoryEntry[] = [];
  champion = "";
  readonly ancestors: { sha: string; since: string; until?: string }[] = [];
  private nextPr = 1;

  constructor(public now = T0) {}

  at(t: number): this {
    this.now = t;
    return this;
  }

  /** Advances the clock by days. */
  after(days: number): this {
    this.now += days * DAY;
    return this;
  }

  /** A gate of a pull request's head; returns the gate. */
  gate(s: Step, pr = this.nextPr++, sha = shaOf(1000 + pr)): GateRecord {
    const g = gateRecord(pr, sha, s);
    this.entries.push({ schema_version: 1, kind: "gate", time: iso(this.now), run_id: g.runs[0]!, gate: g });
    return g;
  }

  /** A gate, then (an hour later) the promotion of its pull request: main takes the step. */
  merge(s: Step): this {
    const g = this.gate(s);
    this.now += 3600_000;
    return this.promote(shaOf(5000 + g.pull_request!), g);
  }

  promote(sha: string, step?: GateRecord): this {
    const previous = this.champion;
    this.entries.push({
      schema_version: 1,
      kind: "promotion",
      time: iso(this.now),
      change: {
        sha,
        ...(previous ? { previous } : {}),
        ...(step?.pull_request ? { pull_request: step.pull_request } : {}),
        ...(step ? { step: { gated: iso(this.now - 3600_000), gate: step } } : {}),
      },
    });
    return this.reign(sha);
  }

  rollback(): this {
    const previous = this.champion;
    const back = this.ancestors.at(-2)!.sha;
    this.entries.push({ schema_version: 1, kind: "rollback", time: iso(this.now), change: { sha: back, previous } });
    return this.reign(back);
  }

  private reign(sha: string): this {
    const last = this.ancestors.at(-1);
    if (last) last.until = iso(this.now);
    this.ancestors.push({ sha, since: iso(this.now) });
    this.champion = sha;
    return this;
  }

  /** A drift run of the champion against an ancestor: its estimate in ms, on a level of levelMs. */
  drift(
    ancestor: string,
    estimateMs: number,
    halfMs = 0.1,
    levelMs = 10,
    key = { workload: "work", rate: 1000, percentile: 99 },
  ): this {
    this.entries.push({
      schema_version: 1,
      kind: "drift",
      time: iso(this.now),
      run_id: `calibrate-${this.entries.length}-drift-0`,
      drift: {
        ...key,
        champion_sha: this.champion,
        ancestor_sha: ancestor,
        estimate_ms: estimateMs,
        ci_ms: [estimateMs - halfMs, estimateMs + halfMs],
        ancestor_ms: levelMs,
        pairs: 90,
      },
    });
    return this;
  }

  calibration(halfWidthMs: number, key = { workload: "work", rate: 1000, percentile: 99 }): this {
    this.entries.push({
      schema_version: 1,
      kind: "calibration",
      time: iso(this.now),
      run_id: `calibrate-${this.entries.length}-0`,
      calibration: { ...key, half_width_ms: halfWidthMs, ci_ms: [-halfWidthMs / 2, halfWidthMs * 1.5], pairs: 90 },
    });
    return this;
  }

  /** The document perf-host history prints, read back through the contract. */
  build(): History {
    const doc = {
      schema_version: 1,
      time: iso(this.now),
      champion: this.champion,
      ancestors: [...this.ancestors].reverse(),
      entries: this.entries,
      bound_bytes: 16 << 20,
      dropped: 0,
    };
    return parseHistory("built history", structuredClone(doc));
  }
}

/** Debian's chromium, and the flags a headless page is opened with (scripts/history-demo.mjs reads the same file). */
export const CHROMIUM = chromium.executablePath;
export const CHROMIUM_FLAGS = chromium.args;

/**
 * 24 gates, 6 promotions (reds merged, a green, a grey), a rollback, two calibrations, two keys
 * and a drift run: the shape of a month of a busy repository.
 */
export function busyHistory(): History {
  const b = new HistoryBuilder().promote(shaOf(1)).calibration(0.05);
  const merged = [0.3, 0.35, 0.4, -0.5, 0.05, 0.2];
  for (let i = 0; i < 18; i++) {
    b.after(1.5).gate({ estimateMs: ((i % 5) - 2) * 0.1, halfMs: 0.15, thresholdMs: 1 });
    if (i % 3 === 2)
      b.after(0.5).merge({
        estimateMs: merged[(i - 2) / 3]!,
        halfMs: merged[(i - 2) / 3] === 0.05 ? 0.2 : 0.1,
        thresholdMs: 1,
      });
    if (i === 9) b.calibration(0.04);
  }
  b.after(1).rollback().after(0.5).drift(shaOf(1), 1.1, 0.25);
  b.after(0.2).gate({ estimateMs: 0.2, halfMs: 0.1, workload: "checkout", rate: 200 });
  return b.build();
}
