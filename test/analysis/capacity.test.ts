// Capacity on paper: a gate's host time from its planned runs, and the pool's queue estimate
// (Erlang C, Allen-Cunneen for M/G/c, plus the landing delay) against a simulation of the pool's
// own landing: gates arriving at random, each taking a free host at once or else waiting, the
// waiting gates watching the busy hosts and one of them (whichever gets there first) starting on
// a host the landing delay after it frees, holding it for its runs and their extensions.
// Seeded; the figures it prints are docs/design/0027-capacity-on-paper.md's.
import { describe, expect, it } from "vitest";
import { erlangC, gateHostTime, hostsNeeded, queueEstimate, runSeconds } from "../../src/analysis/capacity";
import { seededRandom } from "../../src/analysis/random";

/** A min-heap of [time, id]. */
class Heap {
  private a: [number, number][] = [];
  get size() {
    return this.a.length;
  }
  push(x: [number, number]) {
    const a = this.a;
    a.push(x);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (a[p]![0] <= a[i]![0]) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): [number, number] {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]![0] < a[m]![0]) m = l;
        if (r < a.length && a[r]![0] < a[m]![0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

interface Simulated {
  meanWaitSeconds: number;
  waitProbability: number;
  utilization: number;
  p95WaitSeconds: number;
}

const FREE = 0;
const GATE = 1;
const PROMOTION = 2;

/**
 * The pool as perf-gate runs it. `service` draws a gate's host time; a promotion holds every
 * host, each as soon as it is free, before any waiting gate.
 */
function simulatePool(o: {
  hosts: number;
  arrivalsPerHour: number;
  landing: number;
  gates: number;
  seed: number;
  service: (rand: () => number) => number;
  promotions?: { perHour: number; seconds: number };
}): Simulated {
  const rand = seededRandom(o.seed);
  const events = new Heap();
  const event = (time: number, kind: number, id = 0) => events.push([time, kind * 1e9 + id]);
  const arrival: number[] = [];
  let t = 0;
  for (let g = 0; g < o.gates; g++) {
    t += -Math.log(1 - rand()) * (3600 / o.arrivalsPerHour);
    arrival.push(t);
    event(t, GATE, g);
  }
  for (let p = 0; o.promotions; ) {
    p += -Math.log(1 - rand()) * (3600 / o.promotions.perHour);
    if (p > t) break;
    event(p, PROMOTION);
  }
  const busy = new Array<boolean>(o.hosts).fill(false);
  const promotionsDue = new Array<number>(o.hosts).fill(0);
  const waiting: number[] = [];
  const waits: number[] = [];
  let held = 0;
  /** Host h runs something of `seconds` from `start` (it is busy, idle or not, from now on). */
  const hold = (h: number, start: number, seconds: number) => {
    busy[h] = true;
    held += seconds;
    event(start + seconds, FREE, h);
  };
  while (events.size > 0) {
    const [now, code] = events.pop();
    const kind = Math.floor(code / 1e9);
    const id = code % 1e9;
    if (kind === GATE) {
      const h = busy.indexOf(false);
      if (h < 0) waiting.push(id);
      else {
        waits.push(0);
        hold(h, now, o.service(rand));
      }
    } else if (kind === PROMOTION) {
      for (let h = 0; h < o.hosts; h++) {
        if (busy[h]) promotionsDue[h]!++;
        else hold(h, now, o.promotions!.seconds);
      }
    } else if (promotionsDue[id]! > 0) {
      promotionsDue[id]!--;
      hold(id, now, o.promotions!.seconds);
    } else if (waiting.length > 0) {
      // The waiting gates race for the freed host; one of them, any, starts there after the landing.
      const [g] = waiting.splice(Math.floor(rand() * waiting.length), 1);
      waits.push(now + o.landing - arrival[g!]!);
      hold(id, now + o.landing, o.service(rand));
    } else busy[id] = false;
  }
  // The first tenth of the gates warms the queue up from empty.
  const kept = waits.slice(Math.floor(o.gates / 10));
  const sorted = [...kept].sort((a, b) => a - b);
  return {
    meanWaitSeconds: kept.reduce((a, b) => a + b, 0) / kept.length,
    waitProbability: kept.filter((w) => w > 0).length / kept.length,
    utilization: held / (o.hosts * arrival.at(-1)!),
    p95WaitSeconds: sorted[Math.floor(0.95 * sorted.length)]!,
  };
}

describe("a gate's host time", () => {
  it("is its runs' warm-up, slices and overhead; extensions repeat a comparison's run", () => {
    const run = { warmupSeconds: 10, sliceSeconds: 0.5, pairs: 90 };
    expect(runSeconds(run, { runSeconds: 8 })).toBe(108);
    const t = gateHostTime([run, { warmupSeconds: 10, sliceSeconds: 1.25, pairs: 36 }], {
      runSeconds: 8,
      maxExtensions: 2,
      extensionRate: 0.25,
    });
    expect(t.runs).toEqual([108, 108]);
    expect(t.seconds).toBe(216);
    expect(t.maxSeconds).toBe(648);
    expect(t.meanSeconds).toBe(216 + 2 * 108 * 2 * 0.25);
    expect(t.varianceSeconds2).toBeCloseTo(2 * 108 * 108 * 2 * 0.25 * 0.75, 9);
    expect(() => gateHostTime([run], { runSeconds: 8, maxExtensions: 2, extensionRate: 1.5 })).toThrow(
      /extensionRate: a share in \[0, 1\], got 1.5/,
    );
  });
});

describe("the queue estimate", () => {
  it("Erlang C matches its closed forms: M/M/1 waits with probability ρ, M/M/2 at a = 1 with 1/3", () => {
    expect(erlangC(1, 0.6)).toBeCloseTo(0.6, 12);
    expect(erlangC(2, 1)).toBeCloseTo(1 / 3, 12);
    // M/M/3 at a = 2: (8/6)(3/1) / (1 + 2 + 2 + 4) = 4/9.
    expect(erlangC(3, 2)).toBeCloseTo(4 / 9, 12);
    // M/M/1's mean wait ρ/(μ − λ), and no landing delay: Allen-Cunneen is exact for exponential service.
    const mm1 = queueEstimate({
      arrivalsPerHour: 18,
      meanSeconds: 100,
      varianceSeconds2: 100 * 100,
      hosts: 1,
      landingSeconds: 0,
    });
    expect(mm1.meanWaitSeconds).toBeCloseTo(0.5 / (1 / 100 - 1 / 200), 9);
    expect(
      queueEstimate({ arrivalsPerHour: 40, meanSeconds: 100, varianceSeconds2: 0, hosts: 1, landingSeconds: 3 })
        .meanWaitSeconds,
    ).toBe(Number.POSITIVE_INFINITY);
  });

  // The regimes a team meets: one to four hosts, from a quiet day to a pool near its limit, for
  // the defaults' gate (two runs of ~108 s, a quarter of the comparisons extended).
  const gate = gateHostTime(
    [
      { warmupSeconds: 10, sliceSeconds: 0.5, pairs: 90 },
      { warmupSeconds: 10, sliceSeconds: 0.5, pairs: 90 },
    ],
    { runSeconds: 8, maxExtensions: 2, extensionRate: 0.125 },
  );
  const draw = (rand: () => number) => {
    let s = 0;
    for (const r of gate.runs) {
      s += r;
      for (let k = 0; k < 2; k++) if (rand() < 0.125) s += r;
    }
    return s;
  };
  const cases = [
    { hosts: 1, utilization: 0.3 },
    { hosts: 1, utilization: 0.6 },
    { hosts: 2, utilization: 0.5 },
    { hosts: 2, utilization: 0.8 },
    { hosts: 3, utilization: 0.7 },
    { hosts: 4, utilization: 0.85 },
  ];
  it.each(cases)(
    "holds against a simulation of the pool's landing: $hosts host(s) at $utilization busy",
    ({ hosts, utilization }) => {
      const arrivalsPerHour = (utilization * hosts * 3600) / gate.meanSeconds;
      const estimate = queueEstimate({
        arrivalsPerHour,
        meanSeconds: gate.meanSeconds,
        varianceSeconds2: gate.varianceSeconds2,
        hosts,
        landingSeconds: 3,
      });
      const sim = simulatePool({
        hosts,
        arrivalsPerHour,
        landing: 3,
        gates: 200_000,
        seed: 30 + hosts * 100 + utilization * 10,
        service: draw,
      });
      console.log(
        `[capacity] ${hosts} host(s), ${arrivalsPerHour.toFixed(1)} gates/h (${(utilization * 100).toFixed(0)}% busy): mean wait estimated ${estimate.meanWaitSeconds.toFixed(1)} s, simulated ${sim.meanWaitSeconds.toFixed(1)} s (p95 ${sim.p95WaitSeconds.toFixed(0)} s); waiting ${(estimate.waitProbability * 100).toFixed(1)}% vs ${(sim.waitProbability * 100).toFixed(1)}%`,
      );
      expect(sim.utilization).toBeCloseTo(utilization, 1);
      // The mean wait within 10% (or 3 s for the short waits of a quiet pool). Erlang C's share of
      // gates that wait is M/M/c's, which a less variable host time lowers: it errs high.
      expect(Math.abs(estimate.meanWaitSeconds - sim.meanWaitSeconds)).toBeLessThan(
        Math.max(3, 0.1 * sim.meanWaitSeconds),
      );
      expect(estimate.waitProbability - sim.waitProbability).toBeGreaterThan(-0.02);
      expect(estimate.waitProbability - sim.waitProbability).toBeLessThan(0.08);
    },
  );

  it("holds with promotions, which take every host first: 12 a day of 40 s over 8 busy hours, 2 hosts at 65% busy with gates", () => {
    const promotions = { perHour: 12 / 8, seconds: 40 };
    const reservedShare = (promotions.perHour * promotions.seconds) / 3600;
    const arrivalsPerHour = (0.65 * 2 * 3600) / gate.meanSeconds;
    const estimate = queueEstimate({
      arrivalsPerHour,
      meanSeconds: gate.meanSeconds,
      varianceSeconds2: gate.varianceSeconds2,
      hosts: 2,
      landingSeconds: 3,
      reservedShare,
    });
    const sim = simulatePool({
      hosts: 2,
      arrivalsPerHour,
      landing: 3,
      gates: 200_000,
      seed: 77,
      service: draw,
      promotions,
    });
    console.log(
      `[capacity] 2 hosts, ${arrivalsPerHour.toFixed(1)} gates/h and ${promotions.perHour} promotions/h of ${promotions.seconds} s: mean wait estimated ${estimate.meanWaitSeconds.toFixed(1)} s, simulated ${sim.meanWaitSeconds.toFixed(1)} s; busy ${(estimate.utilization * 100).toFixed(1)}% vs ${(sim.utilization * 100).toFixed(1)}%`,
    );
    expect(estimate.utilization).toBeCloseTo(sim.utilization, 2);
    expect(Math.abs(estimate.meanWaitSeconds - sim.meanWaitSeconds)).toBeLessThan(0.1 * sim.meanWaitSeconds);
  });

  it("says how many hosts keep the mean wait under a limit", () => {
    const q = {
      arrivalsPerHour: 30,
      meanSeconds: gate.meanSeconds,
      varianceSeconds2: gate.varianceSeconds2,
      landingSeconds: 3,
    };
    const needed = hostsNeeded(q, 60)!;
    expect(queueEstimate({ ...q, hosts: needed }).meanWaitSeconds).toBeLessThanOrEqual(60);
    expect(queueEstimate({ ...q, hosts: needed - 1 }).meanWaitSeconds).toBeGreaterThan(60);
  });
});
