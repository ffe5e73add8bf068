// Group-sequential levels for repeated looks at one build (docs/design/0009-extending-gate.md).
// A gate that measures more when its first interval is unclear, and a /perf rerun that pools
// earlier runs, both look again at growing evidence; judging every look at 95% would label far
// more than 5% of no-change pull requests. Each look k (the k-th run pooled) spends a share of
// α by a spending function with no horizon, α·(1 − ρ^k), so however many looks follow, at most
// α is spent; the nominal level of each look comes from the joint law of the looks' statistics,
// which pool nested pairs (Lan & DeMets, Biometrika 1983; Jennison & Turnbull, Group
// Sequential Methods, 2000, ch. 7 and 19).
import { normalCdf } from "./distributions";

/** The spending function's ratio: the first look spends α(1 − ρ), the k-th α(1 − ρ)ρ^(k−1). */
export const SPENDING_RATIO = 0.5;

/** The α spent by the end of look k (1-based). */
export function spentAlpha(alpha: number, look: number): number {
  return alpha * (1 - SPENDING_RATIO ** look);
}

/** Standard normal quantile, by bisection on the CDF (monotone, so it cannot diverge). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  let lo = -40;
  let hi = 40;
  for (let i = 0; i < 200 && hi - lo > 1e-13; i++) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

const GRID = 401;

/**
 * The two-sided nominal α of each look: look k rejects when |Z_k| ≥ c_k, and c_k is set so that
 * the chance of a first rejection at look k, under no difference, is α spent at k minus α spent
 * at k−1. `pairs` is each look's cumulative number of pairs (its information, increasing). The
 * score S_k = Z_k·√n_k is a random walk with independent N(0, n_k − n_(k−1)) steps; its density
 * on the region no look rejected is carried on a grid from look to look.
 */
export function nominalAlphas(alpha: number, pairs: readonly number[]): number[] {
  const key = `${alpha}:${pairs.join(",")}`;
  let levels = computed.get(key);
  if (!levels) {
    levels = computeNominalAlphas(alpha, pairs);
    // Gates repeat the same designs: a few hundred entries hold them all.
    if (computed.size >= 512) computed.delete(computed.keys().next().value!);
    computed.set(key, levels);
  }
  return [...levels];
}

const computed = new Map<string, number[]>();

function computeNominalAlphas(alpha: number, pairs: readonly number[]): number[] {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`nominalAlphas: alpha must be in (0, 1), got ${alpha}`);
  pairs.forEach((n, k) => {
    if (!(n > 0) || (k > 0 && n <= pairs[k - 1]!))
      throw new RangeError(`nominalAlphas: pairs must be positive and increasing, got ${pairs.join(", ")}`);
  });
  const out: number[] = [];
  // The density of S on a grid over the continuation region of the last look.
  let xs: Float64Array = new Float64Array(0);
  let fs: Float64Array = new Float64Array(0);
  for (let k = 0; k < pairs.length; k++) {
    const spend = spentAlpha(alpha, k + 1) - spentAlpha(alpha, k);
    if (k === 0) {
      const c = normalQuantile(1 - spend / 2);
      out.push(spend);
      // S_1 ~ N(0, n_1), kept on the region look 1 did not reject.
      xs = grid(c * Math.sqrt(pairs[0]!));
      const sd1 = Math.sqrt(pairs[0]!);
      fs = xs.map((x) => Math.exp(-0.5 * (x / sd1) ** 2) / (sd1 * Math.sqrt(2 * Math.PI)));
      continue;
    }
    const step = pairs[k]! - pairs[k - 1]!;
    const sd = Math.sqrt(step);
    const root = Math.sqrt(pairs[k]!);
    const dx = xs[1]! - xs[0]!;
    // The chance of crossing ±c·√n_k from the continuation region, as a function of c.
    const crossing = (c: number) => {
      let p = 0;
      for (let i = 0; i < xs.length; i++) {
        const w = fs[i]! * trapezoid(i, xs.length) * dx;
        p += w * (normalCdf((-c * root - xs[i]!) / sd) + normalCdf((xs[i]! - c * root) / sd));
      }
      return p;
    };
    let lo = 0;
    let hi = 40;
    for (let i = 0; i < 60; i++) {
      const mid = (lo + hi) / 2;
      if (crossing(mid) > spend) lo = mid;
      else hi = mid;
    }
    const c = (lo + hi) / 2;
    out.push(2 * (1 - normalCdf(c)));
    [xs, fs] = carryFrom(xs, fs, dx, sd, c * root);
  }
  return out;
}

const trapezoid = (i: number, n: number) => (i === 0 || i === n - 1 ? 0.5 : 1);

/** The density of S_k on (−bound, bound): the last density convolved with a N(0, sd²) step. */
function carryFrom(
  xs: Float64Array,
  fs: Float64Array,
  dx: number,
  sd: number,
  bound: number,
): [Float64Array, Float64Array] {
  const next = grid(bound);
  const out = next.map((y) => {
    let sum = 0;
    for (let i = 0; i < xs.length; i++) {
      const z = (y - xs[i]!) / sd;
      sum += fs[i]! * trapezoid(i, xs.length) * Math.exp(-0.5 * z * z);
    }
    return (sum * dx) / (sd * Math.sqrt(2 * Math.PI));
  });
  return [next, out];
}

function grid(bound: number): Float64Array {
  return Float64Array.from({ length: GRID }, (_, i) => -bound + (2 * bound * i) / (GRID - 1));
}
