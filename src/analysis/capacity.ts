// Capacity on paper (docs/design/0027-capacity-on-paper.md): how long a gate holds a host, from
// its planned runs, and how long gates wait for a host of a pool at a given rate of gates. Pure.
//
// A host measures one run at a time, so a pool of c hosts is a queue with c servers: gates
// arrive at random (Poisson) in the busy hours, each holds one host for its service time (its
// runs, and their extensions), and a gate that finds every host busy waits for one to come free
// (it watches the runs holding them) and takes it a landing delay after (it looks, deploys and
// starts). The mean wait is the Allen-Cunneen approximation for M/G/c (Erlang C's M/M/c wait
// scaled by (1 + Cs²)/2, Cs the service time's coefficient of variation), plus the landing delay
// for a gate that waited, during which the freed host stands idle.
// test/analysis/capacity.test.ts checks it against a simulation of the pool's own landing.

/** One run of a gate: a workload at a rate, as planned. */
export interface RunShape {
  warmupSeconds: number;
  sliceSeconds: number;
  pairs: number;
}

/** What one run holds its host for besides its warm-up and slices (measured; see the record). */
export interface Overheads {
  /** Per run: the wait for quiet CPUs, both arms' fresh start and health checks, stopping them, the result. */
  runSeconds: number;
}

export interface GateHostTime {
  /** Host seconds of each planned run (warm-up, slices, overhead). */
  runs: number[];
  /** The gate as planned: every run once. */
  seconds: number;
  /** Every comparison extended as often as slices.max_extensions allows: the longest a gate holds its host. */
  maxSeconds: number;
  /** The mean and variance, each comparison extended a Binomial(max_extensions, extensionRate) number of times. */
  meanSeconds: number;
  varianceSeconds2: number;
}

/** Seconds one run holds its host. */
export function runSeconds(r: RunShape, o: Overheads): number {
  return r.warmupSeconds + 2 * r.pairs * r.sliceSeconds + o.runSeconds;
}

/**
 * A gate's host time from its planned runs. An extension is the same run again, so each
 * comparison adds k more of its run, k ~ Binomial(maxExtensions, extensionRate): the mean number
 * of extensions per comparison is maxExtensions × extensionRate.
 */
export function gateHostTime(
  runs: readonly RunShape[],
  o: Overheads & { maxExtensions: number; extensionRate: number },
): GateHostTime {
  if (!(o.extensionRate >= 0 && o.extensionRate <= 1))
    throw new Error(`extensionRate: a share in [0, 1], got ${o.extensionRate}`);
  const each = runs.map((r) => runSeconds(r, o));
  const seconds = sum(each);
  const n = o.maxExtensions;
  const q = o.extensionRate;
  return {
    runs: each,
    seconds,
    maxSeconds: seconds * (1 + n),
    meanSeconds: seconds + sum(each.map((s) => s * n * q)),
    varianceSeconds2: sum(each.map((s) => s * s * n * q * (1 - q))),
  };
}

export interface QueueInput {
  /** Gates per hour in the busy hours. */
  arrivalsPerHour: number;
  /** Mean and variance of a gate's host time. */
  meanSeconds: number;
  varianceSeconds2: number;
  hosts: number;
  /** From a host coming free to a waiting gate's run starting there (it looks, deploys, starts). */
  landingSeconds: number;
  /**
   * The share of each host's busy hours taken by work that reaches every host and goes first
   * (promotions and their A/A checks): the gates share what is left.
   */
  reservedShare?: number;
}

export interface QueueEstimate {
  /** Busy share of each host: arrivals × mean host time / hosts, and the reserved share. */
  utilization: number;
  /** The share of gates that find every host busy (Erlang C). */
  waitProbability: number;
  /** Mean wait for a host, over all gates, seconds; Infinity when utilization ≥ 1. */
  meanWaitSeconds: number;
  /** Mean wait of the gates that waited. */
  meanWaitOfWaitingSeconds: number;
}

/** The M/G/c estimate of a pool's queue (Allen-Cunneen), with the landing delay. */
export function queueEstimate(q: QueueInput): QueueEstimate {
  const lambda = q.arrivalsPerHour / 3600;
  const reserved = q.reservedShare ?? 0;
  if (!(reserved >= 0 && reserved < 1)) throw new Error(`reservedShare: a share in [0, 1), got ${reserved}`);
  // Hosts that spend a share of their time on promotions serve gates as if each gate took longer.
  const stretch = 1 / (1 - reserved);
  const utilization = (lambda * q.meanSeconds) / q.hosts + reserved;
  const infinite = {
    utilization,
    waitProbability: 1,
    meanWaitSeconds: Number.POSITIVE_INFINITY,
    meanWaitOfWaitingSeconds: Number.POSITIVE_INFINITY,
  };
  if (utilization >= 1) return infinite;
  // A host freed while gates wait stands idle until the next of them starts there: a share of its
  // time the gates' own runs do not use. Fixed point over that share.
  let c = erlangC(q.hosts, lambda * q.meanSeconds * stretch);
  let held = q.meanSeconds * stretch;
  for (let i = 0; i < 50; i++) {
    held = q.meanSeconds * stretch + c * q.landingSeconds;
    if (lambda * held >= q.hosts) return infinite;
    c = erlangC(q.hosts, lambda * held);
  }
  const offered = lambda * held;
  const cs2 = (q.varianceSeconds2 * stretch * stretch) / (held * held);
  const mmcWait = (c * held) / (q.hosts - offered);
  const meanWaitSeconds = (mmcWait * (1 + cs2)) / 2 + c * q.landingSeconds;
  return {
    utilization,
    waitProbability: c,
    meanWaitSeconds,
    meanWaitOfWaitingSeconds: c > 0 ? meanWaitSeconds / c : 0,
  };
}

/** Erlang C: the probability that an arrival waits, c servers, offered load a (< c) in erlangs. */
export function erlangC(c: number, a: number): number {
  // Terms a^k/k! built one from the last, which stays finite for any pool a team runs.
  let term = 1;
  let below = 0;
  for (let k = 0; k < c; k++) {
    below += term;
    term *= a / (k + 1);
  }
  const top = term * (c / (c - a));
  return top / (below + top);
}

/** The fewest hosts that keep the busy hours' mean wait under `maxWaitSeconds` (and utilization under 1). */
export function hostsNeeded(q: Omit<QueueInput, "hosts">, maxWaitSeconds: number, limit = 64): number | null {
  for (let hosts = 1; hosts <= limit; hosts++) {
    if (queueEstimate({ ...q, hosts }).meanWaitSeconds <= maxWaitSeconds) return hosts;
  }
  return null;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
