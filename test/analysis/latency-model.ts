// A request-level model of an interleaved gate, for the estimator and extension simulations:
// every slice records its own requests, so a per-slice percentile, a per-slice Harrell-Davis
// and one pooled percentile per arm can be read from the same draws. Shaped after the mixed
// workload of the sensitivity benchmark (README, Choosing the defaults): 2% of requests are a
// ~5 ms report, so the p99 sits among them; the host slows both slices of a pair together (a
// heavy-tailed shared factor that drifts), each slice on its own (a heavy-tailed factor the
// pairing cannot cancel), and now and then a burst delays a few of one slice's requests.
import { normalDraw } from "../../src/analysis/random";

export interface LatencyModel {
  pairs: number;
  /** Requests each slice records (300 at 1,000 req/s in 0.5 s past the 0.2 s unrecorded start). */
  requests: number;
  /** The challenger's extra cost: every request takes (1 + shift) times as long. */
  shift: number;
  /** sd of the log of the host's factor shared by a pair's two slices (Student t, 3 df). */
  sharedSd: number;
  /** sd of the log of each slice's own factor (Student t, 3 df). */
  sliceSd: number;
  /** sd of the per-pair step of the shared factor's random walk (drift), log scale. */
  driftSd: number;
  /** Bursts: the probability a slice has one; then 1% of its requests are delayed 2-20 ms. */
  burstProbability: number;
}

/** The defaults' sizes (90 pairs of 0.5 s at 1,000 req/s, p99) and noise like this project's VM. */
export const DEFAULT_MODEL: LatencyModel = {
  pairs: 90,
  requests: 300,
  shift: 0,
  sharedSd: 0.08,
  sliceSd: 0.03,
  driftSd: 0.01,
  burstProbability: 0.01,
};

/** Student t with 3 df scaled to unit variance. */
function t3(rand: () => number): number {
  const z = normalDraw(rand);
  let chi = 0;
  for (let i = 0; i < 3; i++) chi += normalDraw(rand) ** 2;
  return z / Math.sqrt(chi / 3) / Math.sqrt(3);
}

/** One service time, µs: /work (~300 µs) or, for 2% of requests, /report (~5 ms). */
function serviceUs(rand: () => number): number {
  return rand() < 0.02 ? 5000 * Math.exp(0.15 * normalDraw(rand)) : 300 * Math.exp(0.35 * normalDraw(rand));
}

export interface SimulatedPair {
  /** Each arm's recorded latencies, µs, ascending. */
  champion: Float64Array;
  challenger: Float64Array;
}

/** A gate's pairs under the model; `start` continues a drift from an earlier block. */
export function simulatePairs(rand: () => number, m: LatencyModel, start = { drift: 0 }): SimulatedPair[] {
  const slice = (host: number, factor: number) => {
    const own = host * Math.exp(m.sliceSd * t3(rand));
    const bursty = rand() < m.burstProbability;
    const v = new Float64Array(m.requests);
    for (let j = 0; j < m.requests; j++) {
      v[j] = serviceUs(rand) * factor * own + (bursty && rand() < 0.01 ? 2000 + 18_000 * rand() : 0);
    }
    return v.sort();
  };
  return Array.from({ length: m.pairs }, () => {
    start.drift += m.driftSd * normalDraw(rand);
    const host = Math.exp(start.drift + m.sharedSd * t3(rand));
    return { champion: slice(host, 1), challenger: slice(host, 1 + m.shift) };
  });
}
