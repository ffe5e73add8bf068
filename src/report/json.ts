// The analysis as the stable, snake_case JSON the CLI prints and the action writes.
import type { ClassBreakdown, ClassEstimate } from "../analysis/classes";
import type { FunctionBreakdown, FunctionChange } from "../analysis/functions";
import type { DroppedPair } from "../analysis/pairs";
import type { PairedAmount } from "../analysis/resources";
import type { Analysis, Comparison } from "../analysis/verdict";

function amountJson(r: PairedAmount | null) {
  return (
    r && {
      champion: r.champion,
      challenger: r.challenger,
      estimate: r.estimate,
      ci: r.ci,
      percent: r.percent,
      percent_ci: r.percentCi,
      p: r.p,
      pairs: r.pairs,
    }
  );
}

function classEstimateJson(e: ClassEstimate | null) {
  return (
    e && {
      percentile: e.percentile,
      estimate_ms: e.estimateMs,
      ci_ms: e.ciMs,
      p: e.p,
      holm_p: e.holmP,
      estimator: e.estimator,
      moved: e.moved,
    }
  );
}

/** Each request class's difference, in the order the report lists them (moved first, then by size). */
function classesJson(b: ClassBreakdown) {
  return {
    missing: b.missing,
    classes: b.classes.map((k) => ({
      name: k.name,
      index: k.index,
      requests: k.requests,
      errors: k.errors,
      percentile: k.percentile,
      recorded_per_slice: k.recordedPerSlice,
      slo: classEstimateJson(k.slo),
      p50: classEstimateJson(k.p50),
      short: k.short,
    })),
  };
}

function functionChangeJson(x: FunctionChange) {
  return {
    name: x.name,
    champion_us: x.championUs,
    challenger_us: x.challengerUs,
    estimate_us: x.estimateUs,
    ci_us: x.ciUs,
    noise_us: x.noiseUs,
    self_estimate_us: x.selfEstimateUs,
  };
}

/** The functions whose CPU per request moved, and what the sampling took. */
function functionsJson(f: FunctionBreakdown) {
  return {
    status: f.status,
    reason: f.reason,
    grew: f.grew.map(functionChangeJson),
    shrank: f.shrank.map(functionChangeJson),
    tested: f.tested,
    confidence: f.confidence,
    median_noise_us: f.medianNoiseUs,
    samples: f.samples,
    sampler_cpu_seconds: f.samplerCpuSeconds,
    frequency_hz: f.frequencyHz,
    files: f.files,
  };
}

export function comparisonJson(c: Comparison) {
  return {
    key: c.key,
    workload: c.workload,
    rate: c.rate,
    verdict: c.verdict,
    grey_kind: c.greyKind,
    latency: c.latency,
    blocking: c.blocking,
    blocked_by: c.blockedBy,
    blocking_decisive: c.blockingDecisive,
    budget: c.budget,
    estimate_ms: c.estimateMs,
    ci_ms: c.ciMs,
    confidence: c.confidence,
    estimator: c.estimator.kind,
    estimator_fallback: c.estimator.fallback,
    se_ms: c.seMs,
    efficiency: c.efficiency && {
      half_width_ms: c.efficiency.halfWidthMs,
      sampling_half_width_ms: c.efficiency.samplingHalfWidthMs,
      host_adds_percent: c.efficiency.hostAddsPercent,
      narrowed_by: c.efficiency.narrowedBy,
    },
    pairs: c.pairs,
    dropped_pairs: c.droppedPairs.map(droppedPairJson),
    looks: c.looks,
    look_history: c.lookHistory.map((l) => ({
      look: l.look,
      run: l.run,
      pairs: l.pairs,
      estimate_ms: l.estimateMs,
      ci_ms: l.ciMs,
      confidence: l.confidence,
    })),
    runs: c.runs,
    t: { t: c.t.t, df: c.t.df, p: c.t.p, holm_p: c.t.holmP, sd_ms: c.t.sdMs },
    bootstrap_ci_ms: c.bootstrapCiMs,
    sign_test: c.signTest,
    sign_test_p: c.signTest.p,
    wilcoxon: c.wilcoxon,
    wilcoxon_p: c.wilcoxon.p,
    p50_ms: c.p50Ms,
    p999_ms: c.p999Ms,
    throughput_rps: c.throughput,
    error_regression: c.errorRegression,
    resources: c.resources && {
      cpu_us_per_request: amountJson(c.resources.cpuUsPerRequest),
      cpu_cores: amountJson(c.resources.cpuCores),
      rss_bytes: amountJson(c.resources.rssBytes),
    },
    cpu_limit_percent: c.cpuLimitPercent,
    classes: classesJson(c.classes),
    functions: functionsJson(c.functions),
    champion: c.champion,
    challenger: c.challenger,
    floor_ms: c.floorMs,
    threshold_ms: c.thresholdMs,
    flags: c.flags,
    pairs_detail: c.detail,
  };
}

export function analysisJson(a: Analysis, host: string | null = null) {
  const h = a.headline;
  return {
    verdict: a.verdict,
    /** The benchmark host that measured it (null: a local host, or a result file analysed). */
    host,
    grey_kind: a.verdict === "grey" ? h.greyKind : null,
    blocking: a.blocking,
    blocked_by: h.blockedBy,
    estimate_ms: h.estimateMs,
    ci_ms: h.ciMs,
    pairs: h.pairs,
    percentile: a.percentile,
    floor_ms: h.floorMs,
    threshold_ms: h.thresholdMs,
    method: a.method,
    sign_test_p: h.signTest.p,
    wilcoxon_p: h.wilcoxon.p,
    seed: a.seed,
    headline: h.key,
    comparisons: a.comparisons.map(comparisonJson),
    runs: a.runs,
    host_bias: a.hostBias.map((b) => ({ key: b.key, ci_ms: b.ciMs })),
    preflight_flags: a.preflight,
  };
}

/** A dropped pair as analysis.json carries it: why, and what disturbed the instrument. */
export function droppedPairJson(d: DroppedPair) {
  return {
    run: d.run,
    pair: d.pair,
    reason: d.reason,
    disturbances: d.disturbances.map((x) => ({
      arm: x.arm,
      index: x.index,
      lag_at: x.lagAt,
      lag_ms: x.lagMs,
      lag_limit_ms: x.lagLimitMs,
      rate_error_percent: x.rateErrorPercent,
      lagging: x.lagging,
      off_rate: x.offRate,
    })),
    host_disturbances: (d.hostDisturbances ?? []).map((x) => ({
      arm: x.arm,
      index: x.index,
      foreign_cpu_cores: x.foreignCores,
      foreign_connections: x.foreignConnections,
      reason: x.reason,
    })),
  };
}
