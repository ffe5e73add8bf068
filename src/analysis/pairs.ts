// Turns results into slice pairs: one champion and one challenger slice per pair index. A
// pair with an invalid or missing slice, or a slice where the load generator fell behind
// itself, is dropped whole, and the drop is recorded.
import type { LoadgenResult, Slice } from "../contract/result";
import {
  type Disturbance,
  describeDisturbance,
  describeHostDisturbance,
  disturbance,
  type HostDisturbance,
  hostDisturbance,
  plannedLagUs,
} from "./health";
import { AnalysisInputError } from "./input-error";
import { histogramError } from "./statistic";
import { GeneratorDisturbedError, TooFewPairsError } from "./unmeasured";

export interface SlicePair {
  run: string;
  pair: number;
  champion: Slice;
  challenger: Slice;
}

export interface DroppedPair {
  run: string;
  pair: number;
  reason: string;
  /** The pair's slices where the load generator fell behind; empty for other drops. */
  disturbances: Disturbance[];
  /** The pair's slices the host saw foreign load in; empty (or absent) for other drops. */
  hostDisturbances?: HostDisturbance[];
}

/** Whether a pair was dropped because the instrument could not vouch for it: the generator or the host was disturbed. */
export function isDisturbed(d: DroppedPair): boolean {
  return d.disturbances.length > 0 || (d.hostDisturbances?.length ?? 0) > 0;
}

/** The pairs of one result at an SLO percentile (the disturbance rule reads the slice's latency at it). */
export function extractPairs(
  run: string,
  result: LoadgenResult,
  percentile: number,
): { pairs: SlicePair[]; dropped: DroppedPair[] } {
  const byPair = new Map<number, Slice[]>();
  for (const s of result.slices) byPair.set(s.pair, [...(byPair.get(s.pair) ?? []), s]);
  const pairs: SlicePair[] = [];
  const dropped: DroppedPair[] = [];
  const planned = plannedLagUs(result.plan);
  result.slices.forEach((s, i) => {
    const unreadable = histogramError(s);
    if (unreadable) throw new AnalysisInputError(`${run}: slices[${i}].histogram: ${unreadable}`);
  });
  for (const [pair, slices] of [...byPair.entries()].sort((a, b) => a[0] - b[0])) {
    if (slices.length > 2) {
      throw new AnalysisInputError(
        `${run}: pair ${pair} has ${slices.length} slices (indices ${slices.map((s) => s.index).join(", ")}), expected 2`,
      );
    }
    const champion = slices.find((s) => s.arm === "champion");
    const challenger = slices.find((s) => s.arm === "challenger");
    if (slices.length === 2 && (!champion || !challenger)) {
      throw new AnalysisInputError(
        `${run}: pair ${pair} has both slices on the ${slices[0]!.arm} arm (mismatched arms)`,
      );
    }
    if (!champion || !challenger) {
      dropped.push({
        run,
        pair,
        reason: "incomplete pair (the run stopped before its second slice)",
        disturbances: [],
      });
      continue;
    }
    const invalid = [champion, challenger].filter((s) => !s.valid);
    if (invalid.length > 0) {
      dropped.push({
        run,
        pair,
        reason: invalid.map((s) => `${s.arm} slice ${s.index}: ${s.invalid_reason || "invalid"}`).join("; "),
        disturbances: [],
      });
      continue;
    }
    const disturbances = [champion, challenger].flatMap(
      (s) => disturbance(s, result.plan.slice_seconds, percentile, planned) ?? [],
    );
    const hostDisturbances = [champion, challenger].flatMap((s) => hostDisturbance(s) ?? []);
    if (disturbances.length > 0 || hostDisturbances.length > 0) {
      const reason = [...disturbances.map(describeDisturbance), ...hostDisturbances.map(describeHostDisturbance)].join(
        "; ",
      );
      dropped.push({ run, pair, reason, disturbances, ...(hostDisturbances.length > 0 ? { hostDisturbances } : {}) });
      continue;
    }
    pairs.push({ run, pair, champion, challenger });
  }
  return { pairs, dropped };
}

/**
 * The usable pairs of every rerun of one comparison. When the load generator fell behind in
 * more than half of them, or left fewer than two, what was measured is the generator: that is
 * an infrastructure failure, never a verdict. Fewer than two usable pairs for other reasons is
 * an input the analysis refuses.
 */
export function pooledPairs(
  key: string,
  runs: readonly { name: string; result: LoadgenResult }[],
  percentile: number,
): { pairs: SlicePair[]; dropped: DroppedPair[] } {
  const pairs: SlicePair[] = [];
  const dropped: DroppedPair[] = [];
  for (const { name, result } of runs) {
    const extracted = extractPairs(name, result, percentile);
    pairs.push(...extracted.pairs);
    dropped.push(...extracted.dropped);
  }
  const disturbed = dropped.filter(isDisturbed);
  const total = pairs.length + dropped.length;
  if (disturbed.length > total / 2 || (disturbed.length > 0 && pairs.length < 2)) {
    const why = disturbed.length > total / 2 ? "more than half" : `leaving ${pairs.length}, and a verdict needs 2`;
    const generator = disturbed.filter((d) => d.disturbances.length > 0).length;
    const reached = disturbed.filter((d) => d.hostDisturbances?.some((h) => h.foreignConnections > 0)).length;
    const foreign = disturbed.filter((d) => d.hostDisturbances?.some((h) => h.foreignConnections === 0)).length;
    // Without the short slice, a service's long requests hold the generator's sends back by
    // the kernel's slice (1.4 ms on 2 CPUs): the likeliest cause, and one the host can remove.
    const slice = runs.map((r) => r.result.host.generator_slice).find((s) => s?.startsWith("default"));
    const hint =
      generator > 0 && slice
        ? `; its threads ran with the kernel's CPU slice (${slice}), so the services' work delayed its sends: give it CPUs of its own (perf-host --loadgen-cpus)`
        : "";
    const what =
      reached > 0
        ? `an arm served connections the load generator did not open in ${reached} of ${total} pairs of ${key} (${disturbed.length} disturbed, ${why}): someone else loaded it; the host's packet filter between the arms is off or was bypassed (perf-host --net-table)`
        : foreign === 0
          ? `the load generator was disturbed in ${disturbed.length} of ${total} pairs of ${key} (${why}); the host was too busy for its load generator to keep its schedule${hint}`
          : `the host was disturbed in ${disturbed.length} of ${total} pairs of ${key} (${why}): other work on the host took CPU in ${foreign}${generator > 0 ? `, and the load generator fell behind in ${generator}${hint}` : ""}; another job is running on the host`;
    throw new GeneratorDisturbedError(
      [`could not measure: ${what}`, ...disturbed.map((d) => `${d.run} pair ${d.pair}: ${d.reason}`)].join("\n"),
      reached > 0
        ? "an arm served others than the load generator"
        : foreign === 0
          ? "the load generator was disturbed"
          : "the host was disturbed by other work",
    );
  }
  if (pairs.length < 2) {
    const why = dropped
      .slice(0, 3)
      .map((d) => `${d.run} pair ${d.pair}: ${d.reason}`)
      .join("; ");
    const said = `${key}: ${pairs.length} valid pair${pairs.length === 1 ? "" : "s"}; at least 2 are needed (${dropped.length} dropped${why ? `: ${why}` : ""})`;
    // Slices the generator itself marked invalid (queue overflow, the idle arm at work, a run
    // cut short) are the instrument refusing to vouch: what was measured is reported, as for a
    // disturbed generator. Too few pairs with none dropped is a result too short to analyse.
    if (dropped.length > 0)
      throw new TooFewPairsError(
        [`could not measure: ${said}`, ...dropped.map((d) => `${d.run} pair ${d.pair}: ${d.reason}`)].join("\n"),
        "too few pairs were valid",
      );
    throw new AnalysisInputError(said);
  }
  return { pairs, dropped };
}
