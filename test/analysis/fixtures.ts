// Builds load generator results in the exact shape benchmark-host emits, from per-slice
// latencies, for rule and simulation tests. (Tests on real loadgen output live in
// loadgen-output.e2e.test.ts.)
import { build, encodeIntoCompressedBase64, type Histogram } from "hdr-histogram-js";
import { normalDraw } from "../../src/analysis/random";
import { defaultSettings, type GateSettings, type NamedResult } from "../../src/analysis/verdict";
import type { Builds } from "../../src/contract/plan";
import type { LoadgenResult, Slice } from "../../src/contract/result";

export interface PairSpec {
  championUs: number;
  challengerUs: number;
}

export interface ResultSpec {
  pairs: PairSpec[];
  workload?: string;
  rate?: number;
  runId?: string;
  builds?: Builds;
  recorded?: number;
  okRps?: (arm: Slice["arm"], pair: number) => number;
  edit?: (slice: Slice) => void;
}

export function makeSlice(index: number, pair: number, arm: Slice["arm"], p99Us: number, spec: ResultSpec): Slice {
  const rate = spec.rate ?? 1000;
  const recorded = spec.recorded ?? 8000;
  const s: Slice = {
    index,
    pair,
    arm,
    start: new Date(Date.UTC(2026, 10, 21, 12, 0, index * 9)).toISOString(),
    end: new Date(Date.UTC(2026, 10, 21, 12, 0, index * 9 + 9)).toISOString(),
    scheduled: rate * 9,
    sent: rate * 9,
    completed: rate * 9,
    ok: rate * 9,
    recorded,
    errors: { connect: 0, timeout: 0, "4xx": 0, "5xx": 0, other: 0 },
    overflow: 0,
    new_connections: index === 0 ? 10 : 0,
    achieved_rps: rate,
    ok_rps: spec.okRps ? spec.okRps(arm, pair) : rate,
    latency_us: {
      p50: Math.round(p99Us / 4),
      p90: Math.round(p99Us / 2),
      p99: p99Us,
      p999: Math.round(p99Us * 1.5),
      max: Math.round(p99Us * 2),
    },
    service_time_us: { p50: 100, p99: 400 },
    dispatch_lag_us: { p50: 60, p90: 150, p99: 300, p999: 500, max: 800 },
    connection_wait_us: { p50: 1, p99: 2 },
    histogram: "",
    short_of_budget: recorded < 1000 ? ["p99", "p999"] : recorded < 10000 ? ["p999"] : [],
    valid: true,
  };
  spec.edit?.(s);
  return s;
}

export function makeResult(spec: ResultSpec): LoadgenResult {
  const slices = spec.pairs.flatMap((p, i) => [
    makeSlice(2 * i, i, "champion", p.championUs, spec),
    makeSlice(2 * i + 1, i, "challenger", p.challengerUs, spec),
  ]);
  const rate = spec.rate ?? 1000;
  return {
    schema_version: 1,
    generator: "perf-gate-loadgen",
    plan: {
      run_id: spec.runId ?? "run-1",
      workload: spec.workload ?? "default",
      ...(spec.builds ? { builds: spec.builds } : {}),
      targets: { champion: "http://127.0.0.1:8001", challenger: "http://127.0.0.1:8002" },
      rate,
      slice_seconds: 9,
      pairs: spec.pairs.length,
      order: "alternate",
      seed: 1,
      warmup_seconds: 0,
      slice_warmup_ms: 200,
      connections: 10,
      send_window_us: 250,
      timeout_ms: 2000,
      protocol: "http1",
      max_queue: Math.max(64, Math.ceil(rate * 2)),
      requests: [{ method: "GET", path: "/", weight: 1 }],
    },
    seed: 1,
    order: slices.map((s) => s.arm),
    host: {
      hostname: "fixture",
      go_version: "go1.26.8",
      gomaxprocs: 2,
      num_cpu: 2,
      cpu_model: "",
      kernel: "",
      load_avg: [0, 0, 0],
      cpu_idle: "held",
      generator_slice: "0.1 ms",
    },
    started: "2026-11-21T12:00:00Z",
    ended: "2026-11-21T12:01:30Z",
    partial: false,
    warmup: { seconds: 0, sent: 0, ok: 0, errors: 0, overflow: 0 },
    slices,
  };
}

/** Pairs whose differences (challenger − champion) are d, in ms, on a 10 ms baseline. */
export function pairsFromDiffs(dMs: readonly number[]): PairSpec[] {
  return dMs.map((d) => ({ championUs: 10_000, challengerUs: Math.round(10_000 + d * 1000) }));
}

export type Noise = "normal" | "heavy";

/** Student t with 3 df scaled to unit variance: heavy tails, finite variance. */
function t3(rand: () => number): number {
  const z = normalDraw(rand);
  let chi = 0;
  for (let i = 0; i < 3; i++) chi += normalDraw(rand) ** 2;
  return z / Math.sqrt(chi / 3) / Math.sqrt(3);
}

/**
 * Load generator stalls: each slice, with this probability, has the generator stop for 5 to
 * 900 ms (log-uniform; the busy VM saw 29, 260 and 893 ms). Its requests leave late, so the
 * slice's percentile reads up to the stall higher (uniformly 10-70% of it), and its dispatch lag
 * p99 is the stall when `reported` (the instrument seen), or an ordinary 300 µs when not (what
 * the analysis saw before it read the lag).
 */
export interface Stalls {
  probability: number;
  reported: boolean;
}

/**
 * A synthetic interleaved experiment: per-pair noise shared by both slices (slow drift, throttle
 * shocks), which pairing must cancel, plus independent per-slice noise of sd sigmaEUs, which it
 * cannot; the challenger is shiftUs slower. With stalls, some slices measured the generator.
 */
export function simulatedExperiment(
  rand: () => number,
  o: { pairs: number; sigmaEUs: number; noise: Noise; shiftUs: number; runId?: string; stalls?: Stalls },
): NamedResult {
  let drift = 0;
  const lagUs = new Map<number, number>();
  const stall = (index: number) => {
    if (!o.stalls || rand() >= o.stalls.probability) return 0;
    const us = 5000 * Math.exp(rand() * Math.log(900 / 5));
    if (o.stalls.reported) lagUs.set(index, Math.round(us));
    return us * (0.1 + 0.6 * rand());
  };
  const pairs = Array.from({ length: o.pairs }, (_, i) => {
    drift += normalDraw(rand) * 400;
    const shock = rand() < 0.1 ? 5000 * rand() : 0;
    const shared = 12_000 + drift + shock + normalDraw(rand) * 1500;
    const e = () => o.sigmaEUs * (o.noise === "normal" ? normalDraw(rand) : t3(rand));
    return {
      championUs: Math.round(shared + e() + stall(2 * i)),
      challengerUs: Math.round(shared + e() + o.shiftUs + stall(2 * i + 1)),
    };
  });
  const runId = o.runId ?? "run-1";
  const edit = (s: Slice) => {
    const lag = lagUs.get(s.index);
    if (lag !== undefined) s.dispatch_lag_us = { p50: 60, p90: lag, p99: lag, p999: lag, max: lag };
  };
  return { name: runId, result: makeResult({ pairs, runId, edit }) };
}

/**
 * A result whose slices carry HDR histograms of the given latencies (µs), each arm of each pair
 * its own, with the named percentiles read from them as the load generator does.
 */
export function resultWithRequests(
  pairs: readonly { champion: ArrayLike<number>; challenger: ArrayLike<number> }[],
  runId = "run-1",
  builds?: Builds,
): LoadgenResult {
  const histograms = new Map<string, { encoded: string; h: Histogram }>();
  const key = (arm: Slice["arm"], pair: number) => `${arm}/${pair}`;
  pairs.forEach((p, i) => {
    for (const arm of ["champion", "challenger"] as const) {
      const h = build({ numberOfSignificantValueDigits: 3, useWebAssembly: false });
      for (const v of Array.from(p[arm])) h.recordValue(Math.round(v));
      histograms.set(key(arm, i), { encoded: encodeIntoCompressedBase64(h), h });
    }
  });
  const at = (arm: Slice["arm"], i: number) => histograms.get(key(arm, i))!;
  return makeResult({
    pairs: pairs.map((_, i) => ({
      championUs: at("champion", i).h.getValueAtPercentile(99),
      challengerUs: at("challenger", i).h.getValueAtPercentile(99),
    })),
    runId,
    ...(builds ? { builds } : {}),
    edit: (s) => {
      const { h, encoded } = at(s.arm, s.pair);
      s.histogram = encoded;
      s.recorded = h.totalCount;
      s.latency_us = {
        p50: h.getValueAtPercentile(50),
        p90: h.getValueAtPercentile(90),
        p99: h.getValueAtPercentile(99),
        p999: h.getValueAtPercentile(99.9),
        max: h.maxValue,
      };
      s.short_of_budget = [];
    },
  });
}

/** One request class of a workload: its entry, and its latencies (µs) in each arm of each pair. */
export interface ClassSpec {
  request: LoadgenResult["plan"]["requests"][number];
  pairs: readonly { champion: ArrayLike<number>; challenger: ArrayLike<number> }[];
}

/**
 * A result of a workload of several request classes: each slice's histogram holds every class's
 * requests, and its classes[] each one's, as the load generator records them.
 */
export function resultWithClasses(classes: readonly ClassSpec[], runId = "run-1", builds?: Builds): LoadgenResult {
  const pairs = classes[0]!.pairs.map((_, i) => ({
    champion: classes.flatMap((c) => Array.from(c.pairs[i]!.champion)),
    challenger: classes.flatMap((c) => Array.from(c.pairs[i]!.challenger)),
  }));
  const result = resultWithRequests(pairs, runId, builds);
  result.plan.requests = classes.map((c) => c.request);
  for (const s of result.slices) {
    s.classes = classes.map((c) => {
      const values = Array.from(c.pairs[s.pair]![s.arm]);
      const h = build({ numberOfSignificantValueDigits: 3, useWebAssembly: false });
      for (const v of values) h.recordValue(Math.round(v));
      return {
        completed: values.length,
        ok: values.length,
        recorded: values.length,
        errors: { connect: 0, timeout: 0, "4xx": 0, "5xx": 0, other: 0 },
        latency_us: {
          p50: h.getValueAtPercentile(50),
          p90: h.getValueAtPercentile(90),
          p99: h.getValueAtPercentile(99),
          p999: h.getValueAtPercentile(99.9),
          max: h.maxValue,
        },
        histogram: encodeIntoCompressedBase64(h),
        short_of_budget: [],
      };
    });
  }
  return result;
}

/**
 * Settings whose first look is at 95% (the whole procedure of looks at 90%: a first look spends
 * half of α, src/analysis/sequential.ts): rule and report tests written against 95% intervals
 * keep their numbers.
 */
export const firstLookAt95: GateSettings = { ...defaultSettings, confidence: 0.9 };
