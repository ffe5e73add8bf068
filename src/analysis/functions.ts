// Which functions' CPU per request moved between the arms (docs/design/0021-profiles.md), from
// the host's per-slice samples of both arms' stacks. A function's CPU per request in an arm is
// the samples with it on the stack, times the sampling period, over the requests of the arm's
// kept slices; the change is the challenger's less the champion's, its interval from the
// jackknife over pairs (each pair left out of both arms), as the latency estimate's is. Every
// function counted is tested, so each interval is at the Bonferroni level over them: its
// half-width is the noise that function's change must pass, and an A/A should show none past it
// in all but about 1 gate of 20 (measured in the decision record). Pure.

import { type Profiles, profilesSchema } from "../contract/result";
import { studentTQuantile } from "./distributions";
import type { SlicePair } from "./pairs";
import type { NamedResult } from "./verdict";

export interface FunctionChange {
  name: string;
  /** CPU µs per request with the function on the stack (itself and what it calls), per arm. */
  championUs: number;
  challengerUs: number;
  estimateUs: number;
  /** At the Bonferroni level over every function tested. */
  ciUs: [number, number];
  /** The noise this function's change must pass: its interval's half-width. */
  noiseUs: number;
  /** The change in its own time (on top of the stack), µs per request. */
  selfEstimateUs: number;
  moved: boolean;
}

export interface FunctionBreakdown {
  /** recorded; not_available (the host said why); not_asked (no run asked for profiles). */
  status: "recorded" | "not_available" | "not_asked";
  reason: string | null;
  /**
   * The functions whose CPU per request grew past their noise, most first; a caller whose growth
   * one function it always calls carries (90% or more of it) is left out for that function.
   */
  grew: FunctionChange[];
  /** The same for functions that shrank. */
  shrank: FunctionChange[];
  /** Functions tested, the level of each interval, and the median noise among them. */
  tested: number;
  confidence: number;
  medianNoiseUs: number | null;
  /** What the sampling took: samples per arm, perf's own CPU (seconds over every run), the rate. */
  samples: { champion: number; challenger: number };
  samplerCpuSeconds: number;
  frequencyHz: number | null;
  /** Each run's profile files and their sizes, per arm. */
  files: { run: string; arm: "champion" | "challenger"; file: string; bytes: number }[];
}

const profilesOf = (r: NamedResult["result"]): Profiles | null => {
  const p = profilesSchema.safeParse((r as { profiles?: unknown }).profiles);
  if (!p.success) return null;
  const problem = malformed(p.data);
  return problem ? { status: "not_available", reason: `the host's profiles are malformed: ${problem}` } : p.data;
};

/** What in a host's profiles section does not hold together (an index past the table, a count that cannot be), or null. */
function malformed(p: Profiles): string | null {
  const n = p.functions?.length ?? 0;
  for (const [i, callers] of (p.callers ?? []).entries()) {
    const bad = callers.find((j) => !(j >= 0 && j < n));
    if (bad !== undefined) return `callers[${i}] names function ${bad} of ${n}`;
  }
  for (const [k, s] of (p.slices ?? []).entries()) {
    for (const [f, [i, cum, flat]] of s.functions.entries()) {
      if (!(i >= 0 && i < n)) return `slices[${k}].functions[${f}] names function ${i} of ${n}`;
      if (!(flat >= 0 && flat <= cum && cum <= s.samples))
        return `slices[${k}].functions[${f}]: counts ${cum} and ${flat} of ${s.samples} samples`;
    }
  }
  return null;
}

/** A caller is left out for a function it always calls that carries at least this share of its growth. */
const CARRIED = 0.9;

/** The function breakdown of a comparison's kept pairs, at the confidence its verdict used. */
export function functionBreakdown(
  group: readonly NamedResult[],
  pairs: readonly SlicePair[],
  confidence: number,
): FunctionBreakdown {
  const byRun = new Map(group.map((g) => [g.name, profilesOf(g.result)]));
  const recorded = [...byRun.values()].filter((p): p is Profiles => p?.status === "recorded");
  const empty: FunctionBreakdown = {
    status: "not_asked",
    reason: null,
    grew: [],
    shrank: [],
    tested: 0,
    confidence,
    medianNoiseUs: null,
    samples: { champion: 0, challenger: 0 },
    samplerCpuSeconds: 0,
    frequencyHz: null,
    files: [],
  };
  const unavailable = [...byRun.values()].find((p) => p?.status === "not_available");
  if (recorded.length === 0)
    return unavailable
      ? { ...empty, status: "not_available", reason: unavailable.reason ?? "the host did not say why" }
      : empty;
  const hz = recorded[0]!.frequency_hz ?? 0;
  if (!(hz > 0) || recorded.some((p) => p.frequency_hz !== hz)) {
    return { ...empty, status: "not_available", reason: "the runs sampled at different rates and cannot be pooled" };
  }
  const usPerSample = 1e6 / hz;
  // Each kept pair's samples per function and requests, per arm; pairs of runs without profiles are left out.
  const counts = pairs.flatMap((p) => {
    const prof = byRun.get(p.run);
    if (prof?.status !== "recorded") return [];
    const at = (index: number) => prof.slices?.find((s) => s.index === index);
    const c = at(p.champion.index);
    const h = at(p.challenger.index);
    if (!c || !h) return [];
    const fns = prof.functions ?? [];
    const read = (s: NonNullable<typeof c>) => new Map(s.functions.map(([i, cum, flat]) => [fns[i]!, { cum, flat }]));
    return [
      {
        champion: { requests: p.champion.completed, samples: s(c), by: read(c) },
        challenger: { requests: p.challenger.completed, samples: s(h), by: read(h) },
      },
    ];
  });
  const names = [...new Set(recorded.flatMap((p) => p.functions ?? []))];
  const base = {
    ...empty,
    status: "recorded" as const,
    samples: {
      champion: sum(counts.map((x) => x.champion.samples)),
      challenger: sum(counts.map((x) => x.challenger.samples)),
    },
    samplerCpuSeconds: sum(recorded.map((p) => p.cpu_seconds ?? 0)),
    frequencyHz: hz,
    // Named by the arm, never by what the host wrote: the file lands in the report's directory.
    files: group.flatMap((g) =>
      Object.entries(byRun.get(g.name)?.arms ?? {})
        .filter((e): e is ["champion" | "challenger", (typeof e)[1]] => e[0] === "champion" || e[0] === "challenger")
        .map(([arm, f]) => ({ run: g.name, arm, file: `${arm}.pb.gz`, bytes: f.bytes }))
        .sort((a, b) => (a.arm === b.arm ? 0 : a.arm === "champion" ? -1 : 1)),
    ),
  };
  const n = counts.length;
  if (n < 2 || names.length === 0) return { ...base, reason: n < 2 ? "fewer than 2 pairs with profiles" : null };
  const level = 1 - (1 - confidence) / names.length;
  const q = studentTQuantile(1 - (1 - level) / 2, n - 1);
  const changes = names.map((name): FunctionChange => {
    const cum = (arm: "champion" | "challenger") => counts.map((x) => x[arm].by.get(name)?.cum ?? 0);
    const req = (arm: "champion" | "challenger") => counts.map((x) => x[arm].requests);
    const flat = (arm: "champion" | "challenger") => counts.map((x) => x[arm].by.get(name)?.flat ?? 0);
    const r = ratioDifference(cum("champion"), req("champion"), cum("challenger"), req("challenger"));
    const self = ratioDifference(flat("champion"), req("champion"), flat("challenger"), req("challenger"));
    const noise = q * r.se * usPerSample;
    const estimate = r.estimate * usPerSample;
    return {
      name,
      championUs: r.champion * usPerSample,
      challengerUs: r.challenger * usPerSample,
      estimateUs: estimate,
      ciUs: [estimate - noise, estimate + noise],
      noiseUs: noise,
      selfEstimateUs: self.estimate * usPerSample,
      moved: Math.abs(estimate) > noise && noise >= 0,
    };
  });
  const callers = callersOf(recorded);
  const pick = (sign: 1 | -1) => {
    const moved = changes.filter((c) => c.moved && sign * c.estimateUs > 0);
    const carried = (f: FunctionChange) =>
      moved.some(
        (g) => g !== f && callers.get(g.name)?.has(f.name) && sign * g.estimateUs >= CARRIED * sign * f.estimateUs,
      );
    return moved.filter((f) => !carried(f)).sort((a, b) => sign * (b.estimateUs - a.estimateUs));
  };
  const noises = changes.map((c) => c.noiseUs).sort((a, b) => a - b);
  return {
    ...base,
    grew: pick(1),
    shrank: pick(-1),
    tested: names.length,
    confidence: level,
    medianNoiseUs: noises[noises.length >> 1]!,
  };
}

const s = (slice: { samples: number }) => slice.samples;
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** Each function's callers (always above it), by name, from every run's table. */
function callersOf(runs: readonly Profiles[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const p of runs) {
    const fns = p.functions ?? [];
    (p.callers ?? []).forEach((list, i) => {
      const set = out.get(fns[i]!) ?? new Set<string>();
      for (const j of list) set.add(fns[j]!);
      out.set(fns[i]!, set);
    });
  }
  return out;
}

/**
 * The difference of two pooled ratios, challenger's Σa/Σb less champion's, and its jackknife
 * standard error over pairs (pair i left out of both arms at once).
 */
export function ratioDifference(
  champion: readonly number[],
  championRequests: readonly number[],
  challenger: readonly number[],
  challengerRequests: readonly number[],
): { estimate: number; se: number; champion: number; challenger: number } {
  const n = champion.length;
  const [sc, nc, sh, nh] = [sum(champion), sum(championRequests), sum(challenger), sum(challengerRequests)];
  const ratio = (a: number, b: number) => (b > 0 ? a / b : 0);
  const loo = champion.map(
    (_, i) =>
      ratio(sh - challenger[i]!, nh - challengerRequests[i]!) - ratio(sc - champion[i]!, nc - championRequests[i]!),
  );
  const m = sum(loo) / n;
  const se = Math.sqrt(((n - 1) / n) * sum(loo.map((x) => (x - m) ** 2)));
  return { estimate: ratio(sh, nh) - ratio(sc, nc), se, champion: ratio(sc, nc), challenger: ratio(sh, nh) };
}
