// The verdict engine: results in, a labelled, auditable analysis out. Pure: no I/O, and every
// random choice comes from the seed recorded in the output.
import { mean } from "simple-statistics";
import type { BudgetAccount } from "../contract/history";
import type { Builds, Targets } from "../contract/plan";
import { findingSchema, type HostResult, type LoadgenResult, type Slice } from "../contract/result";
import { comparisonKey, sampleBudget } from "../contract/rules";
import { bootstrapMeanInterval } from "./bootstrap";
import { type ClassBreakdown, classBreakdown } from "./classes";
import { type DependencyUsage, dependencyUsage } from "./dependencies";
import { type Efficiency, efficiencyOf } from "./efficiency";
import { type ArmErrors, armErrors, checkWorkloadAnswers, type ErrorRegression, errorRegression } from "./failures";
import { type FunctionBreakdown, functionBreakdown } from "./functions";
import { identityDifferences, identityOf } from "./identity";
import { AnalysisInputError } from "./input-error";
import { type EstimatorKind, estimateLatency } from "./latency-estimator";
import { type Look, looksOf } from "./looks";
import { type DroppedPair, extractPairs, isDisturbed, pooledPairs, type SlicePair } from "./pairs";
import { tInterval } from "./pooled-quantile";
import { seededRandom } from "./random";
import { pairedResources, type Resources } from "./resources";
import { slicePercentileUs } from "./statistic";
import { holmAdjust, pairedT, signTest, wilcoxonSignedRank } from "./tests";

export type { Look } from "./looks";

export type Verdict = "green" | "red" | "grey";
/**
 * Why a comparison is grey: its interval lies within ± the block threshold (equivalent); it
 * excludes 0 but the estimate is inside the host's A/A floor (within floor: a difference this
 * host cannot tell from its own noise, said with both numbers); or it contains 0 and reaches
 * past the threshold (inconclusive: a regression of that size is not ruled out).
 */
export type GreyKind = "equivalent" | "inconclusive" | "within floor";
/** What the latency alone says, whatever else labels the comparison (errors, CPU). */
export type LatencyFinding = "slower" | "faster" | GreyKind;
/**
 * What made a red comparison block: its latency past the threshold, more errors, more CPU, or
 * (budget.ts) a red that would take main past the monthly regression budget.
 */
export type BlockReason = "latency" | "errors" | "cpu" | "budget";

export interface GateSettings {
  /** The SLO's latency percentile, e.g. 99. */
  percentile: number;
  /** The SLO's latency budget in ms, e.g. 200. */
  sloBudgetMs: number;
  /** The regression that blocks a merge, in percent of the budget (default 1). */
  blockThresholdPercent: number;
  /**
   * Confidence of every look at one build together (default 0.95): the k-th look spends
   * α(1 − 2⁻ᵏ) of α = 1 − confidence in all, the first look at 1 − α/2 (sequential.ts).
   */
  confidence: number;
  /** The host's A/A floor in ms: one number, or per comparison key ("workload@rate"). */
  floorMs?: number | Readonly<Record<string, number>>;
  /**
   * A/A intervals (ms) that excluded 0, per comparison key: the two ports differ with the same
   * build on both, so the host is biased until a calibration's interval contains 0 again.
   */
  hostBiasMs?: Readonly<Record<string, readonly [number, number]>>;
  /** Comparison keys whose floor was recorded before floors named a percentile (taken as p99). */
  floorPercentileAssumed?: readonly string[];
  /** resources.block_cpu_percent: block when CPU per request regresses past it over the whole interval. */
  blockCpuPercent?: number;
  /** Resamples for the reported (not deciding) bootstrap interval. */
  bootstrapResamples: number;
  /** Resamples of each slice's requests for the interval's sampling limit (0: not computed). */
  samplingResamples: number;
  seed: number;
}

export const defaultSettings: GateSettings = {
  percentile: 99,
  sloBudgetMs: 200,
  blockThresholdPercent: 1,
  confidence: 0.95,
  bootstrapResamples: 10_000,
  samplingResamples: 200,
  seed: 1,
};

export interface NamedResult {
  name: string;
  /** A load generator's result, or a host's (which carries its pre-flight findings). */
  result: LoadgenResult | HostResult;
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
    | "host_biased"
    | "generator_disturbed"
    | "arm_reached"
    | "host_disturbed"
    | "cpu_idle_not_held"
    | "floor_above_threshold"
    | "floor_percentile_assumed";
  message: string;
}

export interface Estimate {
  estimate: number;
  ci: [number, number];
  p: number;
}

export interface ArmSummary {
  /** Means over the used slices of each slice's value; sloMs the arm's pooled percentile when the estimate is pooled. */
  p50Ms: number;
  sloMs: number;
  p999Ms: number;
  okRps: number;
  /** Requests answered or failed, and the failures by class, over the used slices. */
  requests: number;
  errors: number;
  errorsByClass: ArmErrors["byClass"];
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
  latency: LatencyFinding;
  blocking: boolean;
  /** What makes it block; empty when it does not. */
  blockedBy: BlockReason[];
  /** Red and even the interval's lower end is past the block threshold. */
  blockingDecisive: boolean;
  estimateMs: number;
  ciMs: [number, number];
  /** The confidence this look used (higher than nominal after reruns and extensions; see looks). */
  confidence: number;
  /** The latency estimator the interval is of, and why the per-slice one when it is. */
  estimator: { kind: EstimatorKind; fallback: string | null };
  /** The estimate's standard error (ms): the interval is the estimate ± t(df) times it. */
  seMs: number;
  /** The interval against its sampling limit; null when the slices carry no histograms. */
  efficiency: Efficiency | null;
  pairs: number;
  droppedPairs: DroppedPair[];
  runs: string[];
  looks: number;
  /** Each look at this build (each run pooled in turn), the last one this verdict's. */
  lookHistory: Look[];
  t: { t: number; df: number; p: number; holmP: number; sdMs: number };
  bootstrapCiMs: [number, number];
  signTest: { positive: number; negative: number; p: number };
  wilcoxon: { statistic: number; p: number; method: "exact" | "normal" };
  p50Ms: Estimate;
  p999Ms: Estimate;
  throughput: Estimate & { percent: number };
  errorRegression: ErrorRegression | null;
  /** The builds' CPU and memory, paired; null when the host measured none. */
  resources: Resources | null;
  /** resources.block_cpu_percent, when set. */
  cpuLimitPercent: number | null;
  /** The monthly regression budget's account (budget.ts), when the config sets a budget. */
  budget: BudgetAccount | null;
  /** Each request class's difference at the SLO percentile and p50, beside the verdict on the whole. */
  classes: ClassBreakdown;
  /** The functions whose CPU per request moved, from both arms' sampled stacks, when the runs have them. */
  functions: FunctionBreakdown;
  champion: ArmSummary;
  challenger: ArmSummary;
  floorMs: number | null;
  thresholdMs: number;
  flags: Flag[];
  detail: PairDetail[];
}

export interface Analysis {
  verdict: Verdict;
  /**
   * What was compared, as the host recorded it in every plan (checkSameBuilds made sure they
   * agree): the kind of run and the two SHAs. Null for a load generator's result on its own.
   */
  builds: Builds | null;
  /** The two base URLs (the ports) the load generator measured, when the plan says. */
  targets: Targets | null;
  blocking: boolean;
  headline: Comparison;
  comparisons: Comparison[];
  percentile: number;
  method: string;
  seed: number;
  settings: GateSettings;
  runs: {
    name: string;
    runId: string;
    workload: string;
    rate: number;
    started: string;
    pairs: number;
    dropped: number;
    disturbed: number;
    partial: boolean;
  }[];
  /** Every biased calibration on the host, whichever comparisons it concerns. */
  hostBias: { key: string; ciMs: [number, number] }[];
  /** What the host's pre-flight checks flagged before the runs (load, CPU state), with the runs. */
  preflight: PreflightFlag[];
  /** What each arm's dependencies used, per run (counted in the arm's figures too). */
  dependencies: DependencyUsage[];
}

export interface PreflightFlag {
  check: string;
  detail: string;
  runs: string[];
}

export const METHOD =
  "The SLO percentile of each arm over every request of the kept pairs, its interval from the jackknife over pairs and Student t " +
  "(from 20 pairs with histograms; else the mean of per-pair differences of each slice's percentile, Student t; coverage checked by simulation); " +
  "paired percentile bootstrap, exact sign test and Wilcoxon signed-rank of the per-pair differences reported beside it; " +
  "Holm-Bonferroni across comparisons; the k-th look at one build (a rerun or an extension) at the group-sequential level that spends alpha(1 - 2^-k).";

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
  const rand = seededRandom(settings.seed);
  const partial = [...groups.entries()].map(([key, group]) => compare(key, group, settings, rand));
  const holm = holmAdjust(partial.map((c) => c.t.p));
  const comparisons = partial.map((c, i) => label(c, holm[i]!, 1 - c.confidence, partial.length));
  const headline = headlineOf(comparisons);
  const verdict: Verdict = comparisons.some((c) => c.verdict === "red")
    ? "red"
    : comparisons.some((c) => c.verdict === "green")
      ? "green"
      : "grey";
  return {
    verdict,
    builds: results[0]!.result.plan.builds ?? null,
    targets: results[0]!.result.plan.targets ?? null,
    blocking: comparisons.some((c) => c.blocking),
    headline,
    comparisons,
    percentile: settings.percentile,
    method: METHOD,
    seed: settings.seed,
    settings,
    runs: results.map(({ name, result }) => {
      const { pairs, dropped } = extractPairs(name, result, settings.percentile);
      return {
        name,
        runId: result.plan.run_id,
        workload: result.plan.workload,
        rate: result.plan.rate,
        started: result.started,
        pairs: pairs.length,
        dropped: dropped.length,
        disturbed: dropped.filter(isDisturbed).length,
        partial: result.partial,
      };
    }),
    hostBias: Object.entries(settings.hostBiasMs ?? {}).map(([key, [lo, hi]]) => ({ key, ciMs: [lo, hi] })),
    preflight: preflightFlags(results),
    dependencies: dependencyUsage(results),
  };
}

/** The comparison a verdict leads with: a blocking one, else a red, a green, a grey; the largest estimate first. */
export function headlineOf(comparisons: readonly Comparison[]): Comparison {
  const rank = (c: Comparison) => (c.blocking ? 3 : c.verdict === "red" ? 2 : c.verdict === "green" ? 1 : 0);
  return [...comparisons].sort((a, b) => rank(b) - rank(a) || Math.abs(b.estimateMs) - Math.abs(a.estimateMs))[0]!;
}

const findingsSchema = findingSchema.array();

/** The findings a host flagged before its runs, once each, with the runs they concern. */
function preflightFlags(results: readonly NamedResult[]): PreflightFlag[] {
  const byFinding = new Map<string, PreflightFlag>();
  for (const { name, result } of results) {
    // A load generator's own result has none; a host's lists them (validated again: a result file may be anything).
    const findings = findingsSchema.safeParse((result as { preflight?: unknown }).preflight);
    for (const f of findings.success ? findings.data.filter((x) => x.status === "flag") : []) {
      const id = `${f.check}\0${f.detail}`;
      const seen = byFinding.get(id) ?? { check: f.check, detail: f.detail, runs: [] };
      seen.runs.push(name);
      byFinding.set(id, seen);
    }
  }
  return [...byFinding.values()];
}

/** The comparison a result belongs to: its workload@rate. */
export function resultKey(r: LoadgenResult): string {
  return comparisonKey(r.plan.workload, r.plan.rate);
}

/** Each numeric setting's form: validateSettings checks them, and the CLI says them with its flags. */
export const SETTING_FORMS = {
  percentile: [(n) => n > 0 && n < 100, "a percentile between 0 and 100, such as 99"],
  sloBudgetMs: [(n) => n > 0, "a positive number of ms"],
  blockThresholdPercent: [(n) => n >= 0, "a non-negative percent"],
  confidence: [(n) => n > 0.5 && n < 1, "a confidence between 0.5 and 1, such as 0.95"],
  bootstrapResamples: [(n) => Number.isInteger(n) && n >= 100, "an integer ≥ 100"],
  seed: [(n) => Number.isSafeInteger(n) && n >= 0, "a non-negative integer"],
  blockCpuPercent: [(n) => n > 0, "a positive percent"],
} satisfies Partial<Record<keyof GateSettings, [(n: number) => boolean, string]>>;

function validateSettings(s: GateSettings): void {
  for (const [field, [ok, want]] of Object.entries(SETTING_FORMS)) {
    const v = s[field as keyof typeof SETTING_FORMS];
    if (field === "blockCpuPercent" && v === undefined) continue; // no CPU gate
    if (typeof v !== "number" || !ok(v))
      throw new AnalysisInputError(`settings.${field}: must be ${want}, got ${String(v)}`);
  }
}

/**
 * Pooling is for reruns of one build pair; results of different builds, or an A/A run with an
 * A/B run, must not mix.
 */
function checkSameBuilds(results: readonly NamedResult[]): void {
  for (const field of ["challenger_sha", "champion_sha", "kind", "base"] as const) {
    const seen = new Map<string, string>();
    for (const { name, result } of results) {
      const value = result.plan.builds?.[field];
      if (value) seen.set(value, name);
    }
    if (seen.size > 1) {
      const list = [...seen.entries()].map(([value, name]) => `${value} (${name})`).join(", ");
      throw new AnalysisInputError(
        `results are of different builds (${field}: ${list}); analyse them separately with --each`,
      );
    }
  }
}

/**
 * Reruns of one comparison pool only when they measured the same thing: results that carry an
 * identity (a host's) must all carry the same one.
 */
function checkOneIdentity(key: string, group: readonly NamedResult[]): void {
  if (!group.some((g) => identityOf(g.result))) return; // load generator results on their own
  for (const g of group.slice(1)) {
    const differs = identityDifferences(group[0]!.result, g.result);
    if (differs.length > 0) {
      throw new AnalysisInputError(
        `${key}: ${group[0]!.name} and ${g.name} ran another way (${differs.join(", ")}) and cannot be pooled; analyse them separately with --each`,
      );
    }
  }
}

type Undecided = Omit<
  Comparison,
  | "verdict"
  | "greyKind"
  | "latency"
  | "blocking"
  | "blockedBy"
  | "blockingDecisive"
  | "ciMs"
  | "t"
  | "efficiency"
  | "budget"
> & {
  t: { t: number; df: number; p: number; sdMs: number };
  d: number[];
  samplingSeMs: number | null;
};

/** Measures one comparison: its paired differences, their tests and its flags, unlabelled. */
function compare(key: string, group: NamedResult[], s: GateSettings, rand: () => number): Undecided {
  const { workload, rate } = group[0]!.result.plan;
  checkOneIdentity(key, group);
  // Failures are judged on every slice sent, before any is dropped: a wrong path fails them all.
  const all = (arm: Slice["arm"]) => armErrors(group.flatMap((g) => g.result.slices.filter((x) => x.arm === arm)));
  checkWorkloadAnswers(workload, rate, all("champion"), all("challenger"));
  const { pairs, dropped } = pooledPairs(key, group, s.percentile);
  const at = (p: number) => pairs.map((x) => ms(slicePercentileUs(x.challenger, p) - slicePercentileUs(x.champion, p)));
  const d = at(s.percentile);
  for (const v of d)
    if (!Number.isFinite(v)) throw new AnalysisInputError(`${key}: a per-slice percentile is not a finite number`);
  const primary = estimateLatency(pairs, d, s.percentile, s.samplingResamples, rand);
  const lookHistory = looksOf(group, pairs, d, s);
  // The last look's group-sequential level; its secondary intervals are given at the same level.
  const confidence = lookHistory.at(-1)!.confidence;
  const test = tInterval(primary.estimateMs, primary.seMs, primary.df, s.confidence);
  const sdMs = pairedT(d, s.confidence).sd;
  const boot = bootstrapMeanInterval(d, confidence, s.bootstrapResamples, rand);
  const secondary = (values: number[]): Estimate => {
    const r = pairedT(values, confidence);
    return { estimate: r.mean, ci: [r.ci.lo, r.ci.hi], p: r.p };
  };
  const tp = secondary(pairs.map((x) => x.challenger.ok_rps - x.champion.ok_rps));
  // An arm's SLO latency is what the estimate is a difference of: its pooled percentile, when pooled.
  const champion = {
    ...armSummary(pairs, "champion", s.percentile),
    ...(primary.pooledMs && { sloMs: primary.pooledMs.champion }),
  };
  const challenger = {
    ...armSummary(pairs, "challenger", s.percentile),
    ...(primary.pooledMs && { sloMs: primary.pooledMs.challenger }),
  };
  const flags = [...runFlags(group), ...measurementFlags(pairs, dropped, s.percentile)];
  const errors = errorRegression(champion, challenger);
  if (errors) {
    flags.push({
      code: "more_errors",
      message: `challenger failed ${errors.challenger} of ${challenger.requests} requests, champion ${errors.champion} of ${champion.requests} (one-sided binomial p=${errors.p.toPrecision(2)})`,
    });
  }
  const thresholdMs = (s.blockThresholdPercent / 100) * s.sloBudgetMs;
  const floor = floorOf(key, s, thresholdMs);
  flags.push(...floor.flags);
  const w = wilcoxonSignedRank(d);
  return {
    key,
    workload,
    rate,
    d,
    estimateMs: primary.estimateMs,
    confidence,
    estimator: { kind: primary.kind, fallback: primary.fallback },
    seMs: primary.seMs,
    samplingSeMs: primary.samplingSeMs,
    pairs: pairs.length,
    droppedPairs: dropped,
    runs: group.map((g) => g.name),
    looks: lookHistory.length,
    lookHistory,
    t: { t: test.t, df: primary.df, p: test.p, sdMs },
    bootstrapCiMs: [boot.lo, boot.hi],
    signTest: signTest(d),
    wilcoxon: { statistic: w.statistic, p: w.p, method: w.method },
    p50Ms: secondary(at(50)),
    p999Ms: secondary(at(99.9)),
    throughput: { ...tp, percent: champion.okRps > 0 ? (100 * tp.estimate) / champion.okRps : 0 },
    errorRegression: errors,
    resources: pairedResources(pairs, confidence),
    cpuLimitPercent: s.blockCpuPercent ?? null,
    classes: classBreakdown(group[0]!.result.plan, pairs, s.percentile, confidence, rand),
    functions: functionBreakdown(group, pairs, confidence),
    champion,
    challenger,
    floorMs: floor.ms,
    thresholdMs,
    flags,
    detail: pairs.map((x, i) => ({
      run: x.run,
      pair: x.pair,
      championMs: ms(slicePercentileUs(x.champion, s.percentile)),
      challengerMs: ms(slicePercentileUs(x.challenger, s.percentile)),
      dMs: d[i]!,
    })),
  };
}

const ms = (us: number) => us / 1000;

/** One arm's means over the used slices, and its request and error totals. */
function armSummary(pairs: SlicePair[], arm: Slice["arm"], percentile: number): ArmSummary {
  const slices = pairs.map((x) => x[arm]);
  const e = armErrors(slices);
  return {
    p50Ms: mean(slices.map((x) => ms(x.latency_us.p50))),
    sloMs: mean(slices.map((x) => ms(slicePercentileUs(x, percentile)))),
    p999Ms: mean(slices.map((x) => ms(x.latency_us.p999))),
    okRps: mean(slices.map((x) => x.ok_rps)),
    requests: e.requests,
    errors: e.errors,
    errorsByClass: e.byClass,
  };
}

/** What a run says of itself: that it stopped early, or ran with its CPUs free to sleep. */
function runFlags(group: readonly NamedResult[]): Flag[] {
  return [
    ...group
      .filter((g) => g.result.partial)
      .map(
        (g): Flag => ({
          code: "partial_run",
          message: `${g.name} stopped early: ${g.result.partial_reason ?? "partial"}`,
        }),
      ),
    ...group
      .filter((g) => g.result.host.cpu_idle.startsWith("not held"))
      .map(
        (g): Flag => ({
          code: "cpu_idle_not_held",
          message: `${g.name}: the host asked to hold the CPUs awake but could not (PM QoS ${g.result.host.cpu_idle}); idle CPUs were free to halt, and waking one can stall the generator and both services (perf-host needs CAP_DAC_OVERRIDE, see the host install guide)`,
        }),
      ),
  ];
}

/** What may weaken the measurement itself: too few samples, reconnects, dropped pairs. */
function measurementFlags(pairs: SlicePair[], dropped: DroppedPair[], percentile: number): Flag[] {
  const flags: Flag[] = [];
  const budget = sampleBudget(percentile);
  const short = pairs.flatMap((x) => [x.champion, x.challenger]).filter((x) => x.recorded < budget);
  if (short.length > 0) {
    flags.push({
      code: "short_of_budget",
      message: `${short.length} slice${short.length === 1 ? "" : "s"} recorded fewer than the ${budget.toLocaleString("en-US")} requests a slice's p${percentile} is read from (fewest: ${Math.min(...short.map((x) => x.recorded))}); lengthen slices or raise the rate`,
    });
  }
  const midRun = pairs
    .filter((x) => x.pair > 0)
    .flatMap((x) => [x.champion, x.challenger])
    .filter((x) => x.new_connections > 0);
  if (midRun.length > 0) {
    const total = midRun.reduce((acc, x) => acc + x.new_connections, 0);
    flags.push({
      code: "new_connections",
      message: `${total} new connection${total === 1 ? "" : "s"} opened mid-run in ${midRun.length} slice${midRun.length === 1 ? "" : "s"} (${[...new Set(midRun.map((x) => x.arm))].join(", ")}): a server closing idle keep-alive connections makes slices pay handshakes`,
    });
  }
  const disturbed = dropped.filter((x) => x.disturbances.length > 0);
  const reached = dropped.filter((x) => x.hostDisturbances?.some((d) => d.foreignConnections > 0));
  const foreign = dropped.filter((x) => x.hostDisturbances?.some((d) => d.foreignConnections === 0));
  if (reached.length > 0) {
    flags.push({
      code: "arm_reached",
      message: `${plural(reached.length, "pair")} dropped because an arm served connections the load generator did not open: ${reached
        .map(
          (x) =>
            `${x.run} pair ${x.pair}: ${x
              .hostDisturbances!.filter((d) => d.foreignConnections > 0)
              .map((d) => `${d.arm} slice ${d.index} (${d.reason})`)
              .join(", ")}`,
        )
        .join("; ")}`,
    });
  }
  const invalid = dropped.filter((x) => !isDisturbed(x));
  if (foreign.length > 0) {
    flags.push({
      code: "host_disturbed",
      message: `${plural(foreign.length, "pair")} dropped because other work on the host took CPU while they were measured (foreign load): ${foreign.map((x) => `${x.run} pair ${x.pair}: ${x.hostDisturbances!.map((d) => `${d.arm} slice ${d.index}${d.foreignCores !== null ? ` (${d.foreignCores.toFixed(2)} cores)` : ""}`).join(", ")}`).join("; ")}`,
    });
  }
  if (disturbed.length > 0) {
    flags.push({
      code: "generator_disturbed",
      message: `${plural(disturbed.length, "pair")} dropped because the load generator fell behind its schedule: ${disturbed.map((x) => `${x.run} pair ${x.pair}: ${x.disturbances.map(briefDisturbance).join(", ")}`).join("; ")}`,
    });
  }
  if (invalid.length > 0) {
    flags.push({
      code: "dropped_pairs",
      message: `${plural(invalid.length, "pair")} dropped: ${invalid[0]!.reason}${invalid.length > 1 ? ", …" : ""}`,
    });
  }
  return flags;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "champion slice 6 (dispatch lag p99 893 ms, rate -0.2%)". */
function briefDisturbance(d: DroppedPair["disturbances"][number]): string {
  return `${d.arm} slice ${d.index} (dispatch lag ${d.lagAt} ${d.lagMs.toFixed(d.lagMs >= 10 ? 0 : 1)} ms, limit ${d.lagLimitMs.toFixed(1)} ms; rate ${d.rateErrorPercent > 0 ? "+" : ""}${d.rateErrorPercent.toFixed(1)}%)`;
}

/** The floor a comparison is judged against: the host's A/A floor at its percentile, widened to any bias. */
function floorOf(key: string, s: GateSettings, thresholdMs: number): { ms: number | null; flags: Flag[] } {
  const recorded = typeof s.floorMs === "number" ? s.floorMs : s.floorMs?.[key];
  const bias = s.hostBiasMs?.[key];
  const flags: Flag[] = [];
  let floor = recorded ?? null;
  if (bias) {
    // A difference no larger than the ports' own is no evidence about the builds.
    const [lo, hi] = bias;
    floor = Math.max(floor ?? 0, Math.abs(lo), Math.abs(hi));
    flags.push({
      code: "host_biased",
      message: `the host's last A/A calibration of ${key} gave [${lo.toFixed(3)}, ${hi.toFixed(3)}] ms, which excludes 0: the ports differ with the same build on both; differences within ±${floor.toFixed(3)} ms are treated as noise until a calibration contains 0`,
    });
  }
  if (recorded !== undefined && s.floorPercentileAssumed?.includes(key)) {
    flags.push({
      code: "floor_percentile_assumed",
      message: `the host's floor for ${key} was recorded before floors named their percentile and is taken to be at p99; calibrate again to measure it at p${s.percentile}`,
    });
  }
  if (floor !== null && floor > thresholdMs) {
    flags.push({ code: "floor_above_threshold", message: floorAboveThreshold(floor, s.percentile, thresholdMs) });
  }
  return { ms: floor, flags };
}

/**
 * Said wherever a floor is wider than the block threshold: such a host cannot block
 * (docs/design/0011-instrument-vouches-for-itself.md).
 */
export function floorAboveThreshold(floorMs: number, percentile: number, thresholdMs: number): string {
  const f = (x: number) => x.toFixed(x >= 10 ? 1 : x >= 0.1 ? 2 : 3);
  return `this host cannot block regressions under ${f(floorMs)} ms at p${percentile} (its A/A floor ±${f(floorMs)} ms is wider than the block threshold ${f(thresholdMs)} ms); lengthen the run or quiet the host`;
}

/** Labels one comparison. alpha is this look's level; m comparisons share it through Holm. */
function label(c: Undecided, holmP: number, alpha: number, m: number): Comparison {
  const primary = tInterval(c.estimateMs, c.seMs, c.t.df, 1 - alpha);
  const ci: [number, number] = [primary.lo, primary.hi];
  const flags = [...c.flags];
  const significant = holmP < alpha;
  const withinFloor = c.floorMs !== null && Math.abs(c.estimateMs) <= c.floorMs;
  const errorsRegressed = c.errorRegression !== null && c.errorRegression.p < alpha;
  const cpu = c.resources?.cpuUsPerRequest;
  const cpuRegressed = c.cpuLimitPercent !== null && !!cpu && cpu.percentCi[0] > c.cpuLimitPercent;
  const latency: LatencyFinding =
    significant && !withinFloor
      ? c.estimateMs > 0
        ? "slower"
        : "faster"
      : significant
        ? "within floor"
        : ci[0] >= -c.thresholdMs && ci[1] <= c.thresholdMs
          ? "equivalent"
          : "inconclusive";
  const blockedBy: BlockReason[] = [];
  if (latency === "slower" && c.estimateMs > c.thresholdMs) blockedBy.push("latency");
  if (errorsRegressed) blockedBy.push("errors");
  if (cpuRegressed) blockedBy.push("cpu");
  // More failures, or CPU past the config's limit, block whatever the latency says.
  const verdict: Verdict =
    blockedBy.length > 0 || latency === "slower" ? "red" : latency === "faster" ? "green" : "grey";
  if (m > 1 && !significant && (ci[0] > 0 || ci[1] < 0)) {
    flags.push({
      code: "not_significant_after_holm",
      message: `the interval excludes 0 but Holm's adjusted p=${holmP.toPrecision(2)} across ${m} comparisons is not below ${alpha.toPrecision(2)}`,
    });
  }
  if ((latency === "slower" || latency === "faster") && c.t.sdMs > 0.5 * Math.abs(c.estimateMs)) {
    flags.push({
      code: "heterogeneous",
      message: `per-pair differences spread widely (sd ${c.t.sdMs.toFixed(3)} ms against a mean of ${c.estimateMs.toFixed(3)} ms): the effect is not the same in every slice`,
    });
  }
  const signSignificant = c.signTest.p < alpha;
  if (signSignificant !== significant) {
    flags.push({
      code: "sign_test_disagrees",
      message: signSignificant
        ? `the sign test finds a consistent direction (${c.signTest.positive}+/${c.signTest.negative}−, p=${c.signTest.p.toPrecision(2)}) that the interval does not`
        : `the sign test does not confirm the interval (${c.signTest.positive}+/${c.signTest.negative}−, p=${c.signTest.p.toPrecision(2)}): a few slices may be carrying the mean`,
    });
  }
  const { d: _d, t, samplingSeMs, ...rest } = c;
  return {
    ...rest,
    efficiency: samplingSeMs === null ? null : efficiencyOf(ci, c.seMs, samplingSeMs),
    verdict,
    greyKind: verdict === "grey" ? (latency as GreyKind) : null,
    latency,
    blocking: blockedBy.length > 0,
    blockedBy,
    blockingDecisive: blockedBy.includes("latency") && ci[0] > c.thresholdMs,
    budget: null,
    ciMs: ci,
    t: { ...t, holmP },
    flags,
  };
}
