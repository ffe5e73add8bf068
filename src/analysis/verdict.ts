// The verdict engine: results in, a labelled, auditable analysis out. Pure: no I/O, and every
// random choice comes from the seed recorded in the output.
import { mean } from "simple-statistics";
import { bootstrapMeanInterval } from "./bootstrap";
import { type DroppedPair, extractPairs, sampleBudget, slicePercentileUs, type SlicePair } from "./pairs";
import { seededRandom } from "./random";
import { AnalysisInputError, type LoadgenResult } from "./result-schema";
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
    const key = comparisonKey(r.result);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const alpha = 1 - settings.confidence;
  const rand = seededRandom(settings.seed);
  const partial = [...groups.entries()].map(([key, group]) => compare(key, group, settings, rand));
  const holm = holmAdjust(partial.map((c) => c.t.p));
  const comparisons = partial.map((c, i) => decide(c, holm[i]!, alpha / c.looks, partial.length));
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

export function comparisonKey(r: LoadgenResult): string {
  return `${r.plan.workload}@${r.plan.rate}`;
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
  for (const field of ["challenger_sha", "champion_sha"]) {
    const seen = new Map<string, string>();
    for (const { name, result } of results) {
      const sha = result.plan.meta?.[field];
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

function compare(key: string, group: NamedResult[], s: GateSettings, rand: () => number): Undecided {
  const all: SlicePair[] = [];
  const droppedPairs: DroppedPair[] = [];
  const flags: Flag[] = [];
  for (const { name, result } of group) {
    const { pairs, dropped } = extractPairs(name, result);
    all.push(...pairs);
    droppedPairs.push(...dropped);
    if (result.partial) flags.push({ code: "partial_run", message: `${name} stopped early: ${result.partial_reason ?? "partial"}` });
  }
  if (all.length < 2) {
    const why = droppedPairs.slice(0, 3).map((d) => `${d.run} pair ${d.pair}: ${d.reason}`).join("; ");
    throw new AnalysisInputError(
      `${key}: ${all.length} valid pair${all.length === 1 ? "" : "s"}; at least 2 are needed (${droppedPairs.length} dropped${why ? `: ${why}` : ""})`,
    );
  }
  const ms = (us: number) => us / 1000;
  const at = (p: number) => all.map((x) => ms(slicePercentileUs(x.challenger, p) - slicePercentileUs(x.champion, p)));
  const d = at(s.percentile);
  for (const v of d) if (!Number.isFinite(v)) throw new AnalysisInputError(`${key}: a per-slice percentile is not a finite number`);
  const primary = pairedT(d, s.confidence);
  const boot = bootstrapMeanInterval(d, s.confidence, s.bootstrapResamples, rand);
  const secondary = (values: number[]): Estimate => {
    const r = pairedT(values, s.confidence);
    return { estimate: r.mean, ci: [r.ci.lo, r.ci.hi], p: r.p };
  };
  const rps = all.map((x) => x.challenger.ok_rps - x.champion.ok_rps);
  const tp = secondary(rps);
  const summary = (arm: "champion" | "challenger"): ArmSummary => {
    const slices = all.map((x) => x[arm]);
    return {
      p50Ms: mean(slices.map((x) => ms(x.latency_us.p50))),
      sloMs: mean(slices.map((x) => ms(slicePercentileUs(x, s.percentile)))),
      p999Ms: mean(slices.map((x) => ms(x.latency_us.p999))),
      okRps: mean(slices.map((x) => x.ok_rps)),
      requests: slices.reduce((acc, x) => acc + x.completed, 0),
      errors: slices.reduce((acc, x) => acc + errorsOf(x), 0),
    };
  };
  const champion = summary("champion");
  const challenger = summary("challenger");

  const budget = sampleBudget(s.percentile);
  const short = all.flatMap((x) => [x.champion, x.challenger]).filter((x) => x.recorded < budget);
  if (short.length > 0) {
    flags.push({
      code: "short_of_budget",
      message: `${short.length} slice${short.length === 1 ? "" : "s"} recorded fewer than the ${budget.toLocaleString("en-US")} requests p${s.percentile} needs (fewest: ${Math.min(...short.map((x) => x.recorded))}); lengthen slices or raise the rate`,
    });
  }
  const midRun = all.filter((x) => x.pair > 0).flatMap((x) => [x.champion, x.challenger]).filter((x) => x.new_connections > 0);
  if (midRun.length > 0) {
    const total = midRun.reduce((acc, x) => acc + x.new_connections, 0);
    flags.push({
      code: "new_connections",
      message: `${total} new connection${total === 1 ? "" : "s"} opened mid-run in ${midRun.length} slice${midRun.length === 1 ? "" : "s"} (${[...new Set(midRun.map((x) => x.arm))].join(", ")}): a server closing idle keep-alive connections makes slices pay handshakes`,
    });
  }
  if (droppedPairs.length > 0) {
    flags.push({ code: "dropped_pairs", message: `${droppedPairs.length} pair${droppedPairs.length === 1 ? "" : "s"} dropped: ${droppedPairs[0]!.reason}${droppedPairs.length > 1 ? ", …" : ""}` });
  }

  // Errors are a regression in their own right: given the total number of errors, each is
  // equally likely to come from either arm (per request) if the builds do not differ.
  let errorRegression: Undecided["errorRegression"] = null;
  const errTotal = champion.errors + challenger.errors;
  if (challenger.errors > champion.errors) {
    const share = challenger.requests / Math.max(1, champion.requests + challenger.requests);
    const p = binomialUpperTail(challenger.errors, errTotal, share);
    errorRegression = { champion: champion.errors, challenger: challenger.errors, p };
    flags.push({
      code: "more_errors",
      message: `challenger failed ${challenger.errors} of ${challenger.requests} requests, champion ${champion.errors} of ${champion.requests} (one-sided binomial p=${p.toPrecision(2)})`,
    });
  }

  let floor = typeof s.floorMs === "number" ? s.floorMs : s.floorMs?.[key];
  const bias = s.hostBiasMs?.[key];
  if (bias) {
    // A difference no larger than the ports' own is no evidence about the builds.
    const [lo, hi] = bias;
    floor = Math.max(floor ?? 0, Math.abs(lo), Math.abs(hi));
    flags.push({
      code: "host_biased",
      message: `the host's last A/A calibration of ${key} gave [${lo.toFixed(3)}, ${hi.toFixed(3)}] ms, which excludes 0: the ports differ with the same build on both; differences within ±${floor.toFixed(3)} ms are treated as noise until a calibration contains 0`,
    });
  }
  const [workload, rate] = [group[0]!.result.plan.workload, group[0]!.result.plan.rate];
  const b = signTest(d);
  const w = wilcoxonSignedRank(d);
  return {
    key, workload, rate, d,
    estimateMs: primary.mean,
    pairs: all.length,
    droppedPairs,
    runs: group.map((g) => g.name),
    looks: group.length,
    t: { t: primary.t, df: primary.df, p: primary.p, sdMs: primary.sd },
    bootstrapCiMs: [boot.lo, boot.hi],
    signTest: b,
    wilcoxon: { statistic: w.statistic, p: w.p, method: w.method },
    p50Ms: secondary(at(50)),
    p999Ms: secondary(at(99.9)),
    throughput: { ...tp, percent: champion.okRps > 0 ? (100 * tp.estimate) / champion.okRps : 0 },
    errorRegression,
    champion, challenger,
    floorMs: floor ?? null,
    thresholdMs: (s.blockThresholdPercent / 100) * s.sloBudgetMs,
    flags,
    detail: all.map((x, i) => ({
      run: x.run, pair: x.pair,
      championMs: ms(slicePercentileUs(x.champion, s.percentile)),
      challengerMs: ms(slicePercentileUs(x.challenger, s.percentile)),
      dMs: d[i]!,
    })),
  };
}

function errorsOf(s: LoadgenResult["slices"][number]): number {
  const e = s.errors;
  return e.connect + e.timeout + e["4xx"] + e["5xx"] + e.other;
}

/** Labels one comparison. alpha is this look's level; m comparisons share it through Holm. */
function decide(c: Undecided, holmP: number, alpha: number, m: number): Comparison {
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
