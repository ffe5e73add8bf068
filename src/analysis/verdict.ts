// The verdict engine: results in, a labelled, auditable analysis out. Pure: no I/O, and every
// random choice comes from the seed recorded in the output.
import { mean } from "simple-statistics";
import { bootstrapMeanInterval } from "./bootstrap";
import type { LoadgenResult, Slice } from "../contract/result";
import { comparisonKey, sampleBudget } from "../contract/rules";
import { AnalysisInputError } from "./input-error";
import { type DroppedPair, extractPairs, slicePercentileUs, type SlicePair } from "./pairs";
import { seededRandom } from "./random";
import { binomialUpperTail, holmAdjust, pairedT, signTest, wilcoxonSignedRank } from "./tests";

export type Verdict = "green" | "red" | "grey";
export type GreyKind = "equivalent" | "inconclusive" | "below floor";

export interface GateSettings {
  /** The SLO's latency percentile, e.g. 99. */
  percentile: number;
  /** The SLO's latency budget in ms, e.g. 200. */
  sloBudgetMs: number;
  /** The regression that blocks a merge, in percent of the budget (default 1). */
  blockThresholdPercent: number;
  /** Nominal confidence of a single look (default 0.95). */
  confidence: number;
  /** The host's A/A floor in ms: one number, or per comparison key ("workload@rate"). */
  floorMs?: number | Readonly<Record<string, number>>;
  /**
   * A/A intervals (ms) that excluded 0, per comparison key: the two ports differ with the same
   * build on both, so the host is biased until a calibration's interval contains 0 again.
   */
  hostBiasMs?: Readonly<Record<string, readonly [number, number]>>;
  /** Resamples for the reported (not deciding) bootstrap interval. */
  bootstrapResamples: number;
  seed: number;
}

export const defaultSettings: GateSettings = {
  percentile: 99,
  sloBudgetMs: 200,
  blockThresholdPercent: 1,
  confidence: 0.95,
  bootstrapResamples: 10_000,
  seed: 1,
};

export interface NamedResult {
  name: string;
  result: LoadgenResult;
}

export interface Flag {
  code:
    | "heterogeneous"
    | "short_of_budget"
    | "more_errors"
    | "new_connections"
    | "sign_test_disagrees"
    | "dropped_pairs"
    | "partial_run"
    | "not_significant_after_holm"
    | "host_biased";
  message: string;
}

export interface Estimate {
  estimate: number;
  ci: [number, number];
  p: number;
}

export interface ArmSummary {
  /** Means over the used slices of each slice's value. */
  p50Ms: number;
  sloMs: number;
  p999Ms: number;
  okRps: number;
  requests: number;
  errors: number;
}

export interface PairDetail {
  run: string;
  pair: number;
  championMs: number;
  challengerMs: number;
  dMs: number;
}

export interface Comparison {
  key: string;
  workload: string;
  rate: number;
  verdict: Verdict;
  greyKind: GreyKind | null;
  blocking: boolean;
  /** Red and even the interval's lower end is past the block threshold. */
  blockingDecisive: boolean;
  estimateMs: number;
  ciMs: [number, number];
  /** The confidence this look used (lower than nominal after reruns; see looks). */
  confidence: number;
  pairs: number;
  droppedPairs: DroppedPair[];
  runs: string[];
  looks: number;
  t: { t: number; df: number; p: number; holmP: number; sdMs: number };
  bootstrapCiMs: [number, number];
  signTest: { positive: number; negative: number; p: number };
  wilcoxon: { statistic: number; p: number; method: "exact" | "normal" };
  p50Ms: Estimate;
  p999Ms: Estimate;
  throughput: Estimate & { percent: number };
  errorRegression: { champion: number; challenger: number; p: number } | null;
  champion: ArmSummary;
  challenger: ArmSummary;
  floorMs: number | null;
  thresholdMs: number;
  flags: Flag[];
  detail: PairDetail[];
}

export interface Analysis {
  verdict: Verdict;
  blocking: boolean;
  headline: Comparison;
  comparisons: Comparison[];
  percentile: number;
  method: string;
  seed: number;
  settings: GateSettings;
  runs: { name: string; runId: string; workload: string; rate: number; started: string; pairs: number; dropped: number; partial: boolean }[];
  /** Every biased calibration on the host, whichever comparisons it concerns. */
  hostBias: { key: string; ciMs: [number, number] }[];
}

export const METHOD =
  "Student t interval on the mean of per-pair differences (coverage checked by simulation); " +
  "paired percentile bootstrap, exact sign test and Wilcoxon signed-rank reported beside it; " +
  "Holm-Bonferroni across comparisons; confidence 1 - alpha/k on the k-th look at one build.";

/** Analyses results; several results of one comparison are reruns and are pooled. */
export function analyze(results: readonly NamedResult[], settings: GateSettings = defaultSettings): Analysis {
  validateSettings(settings);
  if (results.length === 0) throw new AnalysisInputError("no results to analyse");
  checkSameBuilds(results);
  const groups = new Map<string, NamedResult[]>();
  for (const r of results) {
    const key = resultKey(r.result);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const alpha = 1 - settings.confidence;
  const rand = seededRandom(settings.seed);
  const partial = [...groups.entries()].map(([key, group]) => compare(key, group, settings, rand));
  const holm = holmAdjust(partial.map((c) => c.t.p));
  const comparisons = partial.map((c, i) => label(c, holm[i]!, alpha / c.looks, partial.length));
  const rank = (c: Comparison) => (c.blocking ? 3 : c.verdict === "red" ? 2 : c.verdict === "green" ? 1 : 0);
  const headline = [...comparisons].sort((a, b) => rank(b) - rank(a) || Math.abs(b.estimateMs) - Math.abs(a.estimateMs))[0]!;
  const verdict: Verdict = comparisons.some((c) => c.verdict === "red")
    ? "red"
    : comparisons.some((c) => c.verdict === "green")
      ? "green"
      : "grey";
  return {
    verdict,
    blocking: comparisons.some((c) => c.blocking),
    headline,
    comparisons,
    percentile: settings.percentile,
    method: METHOD,
    seed: settings.seed,
    settings,
    runs: results.map(({ name, result }) => {
      const { pairs, dropped } = extractPairs(name, result);
      return {
        name, runId: result.plan.run_id, workload: result.plan.workload, rate: result.plan.rate,
        started: result.started, pairs: pairs.length, dropped: dropped.length, partial: result.partial,
      };
    }),
    hostBias: Object.entries(settings.hostBiasMs ?? {}).map(([key, [lo, hi]]) => ({ key, ciMs: [lo, hi] })),
  };
}

/** The comparison a result belongs to: its workload@rate. */
export function resultKey(r: LoadgenResult): string {
  return comparisonKey(r.plan.workload, r.plan.rate);
}

function validateSettings(s: GateSettings): void {
  const bad = (field: string, want: string, got: unknown) => {
    throw new AnalysisInputError(`settings.${field}: must be ${want}, got ${String(got)}`);
  };
  if (!(s.percentile > 0 && s.percentile < 100)) bad("percentile", "in (0, 100)", s.percentile);
  if (!(s.sloBudgetMs > 0)) bad("sloBudgetMs", "a positive number of ms", s.sloBudgetMs);
  if (!(s.blockThresholdPercent >= 0)) bad("blockThresholdPercent", "a non-negative percent", s.blockThresholdPercent);
  if (!(s.confidence > 0.5 && s.confidence < 1)) bad("confidence", "in (0.5, 1)", s.confidence);
  if (!(Number.isInteger(s.bootstrapResamples) && s.bootstrapResamples >= 100)) bad("bootstrapResamples", "an integer ≥ 100", s.bootstrapResamples);
  if (!(Number.isInteger(s.seed) && s.seed >= 0)) bad("seed", "a non-negative integer", s.seed);
}

/** Pooling is for reruns of one build pair; results of different builds must not mix. */
function checkSameBuilds(results: readonly NamedResult[]): void {
  for (const field of ["challenger_sha", "champion_sha"] as const) {
    const seen = new Map<string, string>();
    for (const { name, result } of results) {
      const sha = result.plan.builds?.[field];
      if (sha) seen.set(sha, name);
    }
    if (seen.size > 1) {
      const list = [...seen.entries()].map(([sha, name]) => `${sha} (${name})`).join(", ");
      throw new AnalysisInputError(`results are of different builds (${field}: ${list}); analyse them separately with --each`);
    }
  }
}

type Undecided = Omit<Comparison, "verdict" | "greyKind" | "blocking" | "blockingDecisive" | "confidence" | "ciMs" | "t"> & {
  t: { t: number; df: number; p: number; sdMs: number };
  d: number[];
};

/** Measures one comparison: its paired differences, their tests and its flags, unlabelled. */
function compare(key: string, group: NamedResult[], s: GateSettings, rand: () => number): Undecided {
  const { pairs, droppedPairs, flags } = pooledPairs(key, group);
  const at = (p: number) => pairs.map((x) => ms(slicePercentileUs(x.challenger, p) - slicePercentileUs(x.champion, p)));
  const d = at(s.percentile);
  for (const v of d) if (!Number.isFinite(v)) throw new AnalysisInputError(`${key}: a per-slice percentile is not a finite number`);
  const primary = pairedT(d, s.confidence);
  const boot = bootstrapMeanInterval(d, s.confidence, s.bootstrapResamples, rand);
  const secondary = (values: number[]): Estimate => {
    const r = pairedT(values, s.confidence);
    return { estimate: r.mean, ci: [r.ci.lo, r.ci.hi], p: r.p };
  };
  const tp = secondary(pairs.map((x) => x.challenger.ok_rps - x.champion.ok_rps));
  const champion = armSummary(pairs, "champion", s.percentile);
  const challenger = armSummary(pairs, "challenger", s.percentile);
  flags.push(...measurementFlags(pairs, droppedPairs, s.percentile));
  const errorRegression = errorTest(champion, challenger);
  if (errorRegression) flags.push(errorRegression.flag);
  const floor = floorOf(key, s);
  if (floor.flag) flags.push(floor.flag);
  const w = wilcoxonSignedRank(d);
  return {
    key, workload: group[0]!.result.plan.workload, rate: group[0]!.result.plan.rate, d,
    estimateMs: primary.mean,
    pairs: pairs.length,
    droppedPairs,
    runs: group.map((g) => g.name),
    looks: group.length,
    t: { t: primary.t, df: primary.df, p: primary.p, sdMs: primary.sd },
    bootstrapCiMs: [boot.lo, boot.hi],
    signTest: signTest(d),
    wilcoxon: { statistic: w.statistic, p: w.p, method: w.method },
    p50Ms: secondary(at(50)),
    p999Ms: secondary(at(99.9)),
    throughput: { ...tp, percent: champion.okRps > 0 ? (100 * tp.estimate) / champion.okRps : 0 },
    errorRegression: errorRegression?.test ?? null,
    champion, challenger,
    floorMs: floor.ms,
    thresholdMs: (s.blockThresholdPercent / 100) * s.sloBudgetMs,
    flags,
    detail: pairs.map((x, i) => ({
      run: x.run, pair: x.pair,
      championMs: ms(slicePercentileUs(x.champion, s.percentile)),
      challengerMs: ms(slicePercentileUs(x.challenger, s.percentile)),
      dMs: d[i]!,
    })),
  };
}

const ms = (us: number) => us / 1000;

/** The valid pairs of every rerun of one comparison; at least two are needed. */
function pooledPairs(key: string, group: NamedResult[]): { pairs: SlicePair[]; droppedPairs: DroppedPair[]; flags: Flag[] } {
  const pairs: SlicePair[] = [];
  const droppedPairs: DroppedPair[] = [];
  const flags: Flag[] = [];
  for (const { name, result } of group) {
    const extracted = extractPairs(name, result);
    pairs.push(...extracted.pairs);
    droppedPairs.push(...extracted.dropped);
    if (result.partial) flags.push({ code: "partial_run", message: `${name} stopped early: ${result.partial_reason ?? "partial"}` });
  }
  if (pairs.length < 2) {
    const why = droppedPairs.slice(0, 3).map((d) => `${d.run} pair ${d.pair}: ${d.reason}`).join("; ");
    throw new AnalysisInputError(
      `${key}: ${pairs.length} valid pair${pairs.length === 1 ? "" : "s"}; at least 2 are needed (${droppedPairs.length} dropped${why ? `: ${why}` : ""})`,
    );
  }
  return { pairs, droppedPairs, flags };
}

/** One arm's means over the used slices, and its request and error totals. */
function armSummary(pairs: SlicePair[], arm: Slice["arm"], percentile: number): ArmSummary {
  const slices = pairs.map((x) => x[arm]);
  return {
    p50Ms: mean(slices.map((x) => ms(x.latency_us.p50))),
    sloMs: mean(slices.map((x) => ms(slicePercentileUs(x, percentile)))),
    p999Ms: mean(slices.map((x) => ms(x.latency_us.p999))),
    okRps: mean(slices.map((x) => x.ok_rps)),
    requests: slices.reduce((acc, x) => acc + x.completed, 0),
    errors: slices.reduce((acc, x) => acc + errorsOf(x), 0),
  };
}

/** What may weaken the measurement itself: too few samples, reconnects, dropped pairs. */
function measurementFlags(pairs: SlicePair[], dropped: DroppedPair[], percentile: number): Flag[] {
  const flags: Flag[] = [];
  const budget = sampleBudget(percentile);
  const short = pairs.flatMap((x) => [x.champion, x.challenger]).filter((x) => x.recorded < budget);
  if (short.length > 0) {
    flags.push({
      code: "short_of_budget",
      message: `${short.length} slice${short.length === 1 ? "" : "s"} recorded fewer than the ${budget.toLocaleString("en-US")} requests p${percentile} needs (fewest: ${Math.min(...short.map((x) => x.recorded))}); lengthen slices or raise the rate`,
    });
  }
  const midRun = pairs.filter((x) => x.pair > 0).flatMap((x) => [x.champion, x.challenger]).filter((x) => x.new_connections > 0);
  if (midRun.length > 0) {
    const total = midRun.reduce((acc, x) => acc + x.new_connections, 0);
    flags.push({
      code: "new_connections",
      message: `${total} new connection${total === 1 ? "" : "s"} opened mid-run in ${midRun.length} slice${midRun.length === 1 ? "" : "s"} (${[...new Set(midRun.map((x) => x.arm))].join(", ")}): a server closing idle keep-alive connections makes slices pay handshakes`,
    });
  }
  if (dropped.length > 0) {
    flags.push({ code: "dropped_pairs", message: `${dropped.length} pair${dropped.length === 1 ? "" : "s"} dropped: ${dropped[0]!.reason}${dropped.length > 1 ? ", …" : ""}` });
  }
  return flags;
}

/**
 * Errors are a regression in their own right: given the total number of errors, each is
 * equally likely to come from either arm (per request) if the builds do not differ.
 */
function errorTest(champion: ArmSummary, challenger: ArmSummary): { test: NonNullable<Comparison["errorRegression"]>; flag: Flag } | null {
  if (challenger.errors <= champion.errors) return null;
  const share = challenger.requests / Math.max(1, champion.requests + challenger.requests);
  const p = binomialUpperTail(challenger.errors, champion.errors + challenger.errors, share);
  return {
    test: { champion: champion.errors, challenger: challenger.errors, p },
    flag: {
      code: "more_errors",
      message: `challenger failed ${challenger.errors} of ${challenger.requests} requests, champion ${champion.errors} of ${champion.requests} (one-sided binomial p=${p.toPrecision(2)})`,
    },
  };
}

/** The floor a comparison is judged against: the host's A/A floor, widened to any bias. */
function floorOf(key: string, s: GateSettings): { ms: number | null; flag: Flag | null } {
  const floor = typeof s.floorMs === "number" ? s.floorMs : s.floorMs?.[key];
  const bias = s.hostBiasMs?.[key];
  if (!bias) return { ms: floor ?? null, flag: null };
  // A difference no larger than the ports' own is no evidence about the builds.
  const [lo, hi] = bias;
  const widened = Math.max(floor ?? 0, Math.abs(lo), Math.abs(hi));
  return {
    ms: widened,
    flag: {
      code: "host_biased",
      message: `the host's last A/A calibration of ${key} gave [${lo.toFixed(3)}, ${hi.toFixed(3)}] ms, which excludes 0: the ports differ with the same build on both; differences within ±${widened.toFixed(3)} ms are treated as noise until a calibration contains 0`,
    },
  };
}

function errorsOf(s: Slice): number {
  const e = s.errors;
  return e.connect + e.timeout + e["4xx"] + e["5xx"] + e.other;
}

/** Labels one comparison. alpha is this look's level; m comparisons share it through Holm. */
function label(c: Undecided, holmP: number, alpha: number, m: number): Comparison {
  const confidence = 1 - alpha;
  const primary = pairedT(c.d, confidence);
  const ci: [number, number] = [primary.ci.lo, primary.ci.hi];
  const flags = [...c.flags];
  const significant = holmP < alpha;
  const belowFloor = c.floorMs !== null && Math.abs(c.estimateMs) < c.floorMs;
  const errorsRegressed = c.errorRegression !== null && c.errorRegression.p < alpha;
  let verdict: Verdict = "grey";
  let greyKind: GreyKind | null = null;
  if (errorsRegressed) verdict = "red";
  else if (significant && !belowFloor) verdict = c.estimateMs > 0 ? "red" : "green";
  else if (belowFloor) greyKind = "below floor";
  else if (ci[0] >= -c.thresholdMs && ci[1] <= c.thresholdMs) greyKind = "equivalent";
  else greyKind = "inconclusive";
  if (m > 1 && !significant && (ci[0] > 0 || ci[1] < 0)) {
    flags.push({
      code: "not_significant_after_holm",
      message: `the interval excludes 0 but Holm's adjusted p=${holmP.toPrecision(2)} across ${m} comparisons is not below ${alpha.toPrecision(2)}`,
    });
  }
  const blocking = verdict === "red" && (errorsRegressed || c.estimateMs > c.thresholdMs);
  if (verdict !== "grey" && c.t.sdMs > 0.5 * Math.abs(c.estimateMs)) {
    flags.push({
      code: "heterogeneous",
      message: `per-pair differences spread widely (sd ${c.t.sdMs.toFixed(3)} ms against a mean of ${c.estimateMs.toFixed(3)} ms): the effect is not the same in every slice`,
    });
  }
  const signSignificant = c.signTest.p < alpha;
  if (signSignificant !== (significant && !errorsRegressed)) {
    flags.push({
      code: "sign_test_disagrees",
      message: signSignificant
        ? `the sign test finds a consistent direction (${c.signTest.positive}+/${c.signTest.negative}−, p=${c.signTest.p.toPrecision(2)}) that the interval does not`
        : `the sign test does not confirm the interval (${c.signTest.positive}+/${c.signTest.negative}−, p=${c.signTest.p.toPrecision(2)}): a few slices may be carrying the mean`,
    });
  }
  const { d: _d, t, ...rest } = c;
  return {
    ...rest,
    verdict,
    greyKind,
    blocking,
    blockingDecisive: blocking && ci[0] > c.thresholdMs,
    confidence,
    ciMs: ci,
    t: { ...t, holmP },
    flags,
  };
}
