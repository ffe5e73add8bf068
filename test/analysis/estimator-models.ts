// The estimators the simulations compare, at the defaults' sizes (90 pairs of 300 recorded
// requests: 0.5 s slices at 1,000 req/s and p99) on a request-level model with shared per-pair
// noise, heavy tails and drift (latency-model.ts). Seeded; the figures the simulations print are
// docs/design/0008-pooled-percentile.md's and 0009-extending-gate.md's. Each simulation is a
// file of its own, so that they run in parallel.
import { armSample, pooledDifference, tInterval, weightedPercentile } from "../../src/analysis/pooled-quantile";
import { seededRandom } from "../../src/analysis/random";
import { harrellDavis } from "../../src/analysis/statistic";
import { pairedT } from "../../src/analysis/tests";
import { type LatencyModel, type SimulatedPair, simulatePairs } from "./latency-model";

export const Q = 0.99;
export const ALPHA = 0.05;
/** A slice's own p99 as the load generator reports it: the value at rank ⌈0.99·n⌉. */
export const slicePercentile = (v: Float64Array) => v[Math.max(1, Math.ceil(Q * v.length)) - 1]!;
const hd = (v: Float64Array) => harrellDavis(v, new Float64Array(v.length).fill(1), 99);
const all = () => 1;

export interface Interval {
  estimate: number;
  se: number;
  df: number;
}
export type Estimator = {
  name: string;
  of: (pairs: readonly SimulatedPair[]) => Interval;
  truth: (population: readonly SimulatedPair[]) => number;
};

const perSlice = (name: string, stat: (v: Float64Array) => number): Estimator => ({
  name,
  of: (ps) => {
    const t = pairedT(
      ps.map((p) => stat(p.challenger) - stat(p.champion)),
      0.95,
    );
    return { estimate: t.mean, se: t.se, df: t.df };
  },
  truth: (ps) => ps.reduce((acc, p) => acc + stat(p.challenger) - stat(p.champion), 0) / ps.length,
});
export const pooledOf = (ps: readonly SimulatedPair[]) =>
  pooledDifference(armSample(ps.map((p) => p.champion)), armSample(ps.map((p) => p.challenger)), Q);
export const POOLED: Estimator = {
  name: "pooled p99, jackknife over pairs",
  of: (ps) => pooledOf(ps),
  truth: (ps) =>
    weightedPercentile(armSample(ps.map((p) => p.challenger)), Q, all) -
    weightedPercentile(armSample(ps.map((p) => p.champion)), Q, all),
};
export const ESTIMATORS: Estimator[] = [
  perSlice("per-slice p99, t (before)", slicePercentile),
  perSlice("per-slice Harrell-Davis, t", hd),
  POOLED,
];

/** Each estimator's estimand under a model: its estimate over a population of pairs. */
function truths(m: LatencyModel): number[] {
  if (m.shift === 0) return ESTIMATORS.map(() => 0);
  const population = simulatePairs(seededRandom(99), { ...m, pairs: 3000 });
  return ESTIMATORS.map((e) => e.truth(population));
}

export interface Tally {
  covered: number;
  labelled: number;
  red: number;
  halfWidths: number[];
}

export function run(m: LatencyModel, gates: number, seed: number): { tallies: Tally[]; level: number } {
  const want = truths(m);
  const rand = seededRandom(seed);
  const tallies = ESTIMATORS.map((): Tally => ({ covered: 0, labelled: 0, red: 0, halfWidths: [] }));
  let level = 0;
  for (let g = 0; g < gates; g++) {
    const ps = simulatePairs(rand, m);
    level += ps.reduce((acc, p) => acc + slicePercentile(p.champion), 0) / ps.length / gates;
    ESTIMATORS.forEach((e, i) => {
      const r = e.of(ps);
      const ci = tInterval(r.estimate, r.se, r.df, 1 - ALPHA);
      const t = tallies[i]!;
      if (ci.lo <= want[i]! && ci.hi >= want[i]!) t.covered++;
      if (ci.lo > 0 || ci.hi < 0) t.labelled++;
      if (ci.lo > 0) t.red++;
      t.halfWidths.push((ci.hi - ci.lo) / 2);
    });
  }
  return { tallies, level };
}

export const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
