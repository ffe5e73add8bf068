// Paired tests on the differences d_i: Student's t, the exact sign test, the Wilcoxon
// signed-rank test, and Holm's step-down adjustment. Each matches scipy.stats (see
// test/analysis/reference.py for the exact calls).
import { mean, sampleStandardDeviation } from "simple-statistics";
import { normalCdf, studentTQuantile, studentTTwoSidedP } from "./distributions";

export interface Interval {
  lo: number;
  hi: number;
}

export interface TResult {
  mean: number;
  sd: number;
  se: number;
  df: number;
  t: number;
  p: number;
  ci: Interval;
}

/** One-sample t on d (a paired t-test), with the two-sided interval at `confidence`. */
export function pairedT(d: readonly number[], confidence: number): TResult {
  const n = d.length;
  if (n < 2) throw new RangeError(`pairedT: need at least 2 differences, got ${n}`);
  const m = mean(d as number[]);
  const sd = sampleStandardDeviation(d as number[]);
  const se = sd / Math.sqrt(n);
  const df = n - 1;
  const q = studentTQuantile(1 - (1 - confidence) / 2, df);
  // With no spread at all, the mean is exact: zero-width interval, p 0 or 1.
  const t = se === 0 ? (m === 0 ? 0 : Math.sign(m) * Infinity) : m / se;
  return { mean: m, sd, se, df, t, p: studentTTwoSidedP(t, df), ci: { lo: m - q * se, hi: m + q * se } };
}

/** Two-sided exact binomial test of k successes in n at p = 1/2 (scipy.stats.binomtest). */
export function signTest(d: readonly number[]): { positive: number; negative: number; p: number } {
  const positive = d.filter((x) => x > 0).length;
  const negative = d.filter((x) => x < 0).length;
  const n = positive + negative;
  if (n === 0) return { positive, negative, p: 1 };
  const k = Math.min(positive, negative);
  let tail = 0;
  for (let i = 0; i <= k; i++) tail += binomialPmfHalf(n, i);
  // For p = 1/2 the distribution is symmetric; the two tails are equal (the middle counted once).
  return { positive, negative, p: Math.min(1, 2 * tail) };
}

function binomialPmfHalf(n: number, k: number): number {
  let logC = 0;
  for (let i = 1; i <= k; i++) logC += Math.log(n - k + i) - Math.log(i);
  return Math.exp(logC - n * Math.LN2);
}

export interface WilcoxonResult {
  statistic: number; // min(W+, W-), as scipy reports it
  p: number;
  method: "exact" | "normal";
  n: number;
}

/**
 * Wilcoxon signed-rank test, two-sided, zeros dropped (scipy's zero_method="wilcox"). Exact
 * null distribution when n ≤ 50 and no |d| ties, as scipy's method="exact"; otherwise the
 * normal approximation with the tie correction and no continuity correction (method="approx").
 */
export function wilcoxonSignedRank(d: readonly number[]): WilcoxonResult {
  const nz = d.filter((x) => x !== 0);
  const n = nz.length;
  if (n === 0) return { statistic: 0, p: 1, method: "exact", n };
  const order = nz.map((x, i) => ({ a: Math.abs(x), i })).sort((x, y) => x.a - y.a);
  const ranks = new Array<number>(n);
  const tieSizes: number[] = [];
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && order[j + 1]!.a === order[i]!.a) j++;
    const avg = (i + j + 2) / 2;
    for (let k = i; k <= j; k++) ranks[order[k]!.i] = avg;
    if (j > i) tieSizes.push(j - i + 1);
    i = j + 1;
  }
  let wPlus = 0;
  nz.forEach((x, i) => {
    if (x > 0) wPlus += ranks[i]!;
  });
  const total = (n * (n + 1)) / 2;
  const statistic = Math.min(wPlus, total - wPlus);
  if (n <= 50 && tieSizes.length === 0) {
    // Count sign assignments of ranks 1..n by their W+ (dynamic programming over sums).
    const counts = new Float64Array(total + 1);
    counts[0] = 1;
    for (let r = 1; r <= n; r++) for (let s = total; s >= r; s--) counts[s]! += counts[s - r]!;
    let lower = 0;
    for (let s = 0; s <= statistic; s++) lower += counts[s]!;
    return { statistic, p: Math.min(1, (2 * lower) / 2 ** n), method: "exact", n };
  }
  const tieTerm = tieSizes.reduce((acc, t) => acc + t ** 3 - t, 0);
  const sd = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - tieTerm / 48);
  const z = (statistic - total / 2) / sd;
  return { statistic, p: Math.min(1, 2 * normalCdf(-Math.abs(z))), method: "normal", n };
}

/** Holm-Bonferroni adjusted p-values, in the input order. */
export function holmAdjust(p: readonly number[]): number[] {
  const m = p.length;
  const order = p.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  const adjusted = new Array<number>(m);
  let running = 0;
  order.forEach(({ v, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * v));
    adjusted[i] = running;
  });
  return adjusted;
}

/** Upper tail P(X ≥ k) for X ~ Binomial(n, p), exact. */
export function binomialUpperTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  let sum = 0;
  for (let i = k; i <= n; i++) {
    let logC = 0;
    for (let j = 1; j <= i; j++) logC += Math.log(n - i + j) - Math.log(j);
    sum += Math.exp(logC + i * Math.log(p) + (n - i) * Math.log1p(-p));
  }
  return Math.min(1, sum);
}
