// The analysis as the stable, snake_case JSON the CLI prints and the action writes.
import type { Analysis, Comparison } from "../analysis/verdict";

export function comparisonJson(c: Comparison) {
  return {
    key: c.key,
    workload: c.workload,
    rate: c.rate,
    verdict: c.verdict,
    grey_kind: c.greyKind,
    blocking: c.blocking,
    blocking_decisive: c.blockingDecisive,
    estimate_ms: c.estimateMs,
    ci_ms: c.ciMs,
    confidence: c.confidence,
    pairs: c.pairs,
    dropped_pairs: c.droppedPairs,
    looks: c.looks,
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
    champion: c.champion,
    challenger: c.challenger,
    floor_ms: c.floorMs,
    threshold_ms: c.thresholdMs,
    flags: c.flags,
    pairs_detail: c.detail,
  };
}

export function analysisJson(a: Analysis) {
  const h = a.headline;
  return {
    verdict: a.verdict,
    grey_kind: a.verdict === "grey" ? h.greyKind : null,
    blocking: a.blocking,
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
  };
}
