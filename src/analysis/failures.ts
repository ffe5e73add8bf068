// Failed requests: counted per arm and class, judged three ways. Most requests failing on both
// arms is a wrong workload, never a verdict (a workload of 404s got grey, exit 0); most failing
// on the champion alone is a champion that did not serve, so its latency is no baseline (an
// old build answering UNIMPLEMENTED in microseconds read a real challenger as red); more
// failures on the challenger is a regression in its own right (red, blocking).
import type { Slice } from "../contract/result";
import { binomialUpperTail } from "./tests";
import { ChampionFailedError, FailingWorkloadError } from "./unmeasured";

export const ERROR_CLASSES = ["connect", "timeout", "4xx", "5xx", "other"] as const;

export interface ArmErrors {
  /** Requests answered or failed. */
  requests: number;
  errors: number;
  /** The classes above, and a gRPC status as "grpc CODE" (gRPC errors come under HTTP 200). */
  byClass: Record<string, number>;
}

/** More than this share of an arm's requests failing, on both arms, is a configuration error. */
export const FAILING_SHARE = 0.5;

export function armErrors(slices: readonly Slice[]): ArmErrors {
  const byClass: Record<string, number> = Object.fromEntries(
    ERROR_CLASSES.map((c) => [c, slices.reduce((acc, s) => acc + s.errors[c], 0)]),
  );
  for (const s of slices) {
    for (const [code, n] of Object.entries(s.errors.grpc ?? {}))
      byClass[`grpc ${code}`] = (byClass[`grpc ${code}`] ?? 0) + n;
  }
  return {
    requests: slices.reduce((acc, s) => acc + s.completed, 0),
    errors: Object.values(byClass).reduce((acc, n) => acc + n, 0),
    byClass,
  };
}

/** "4xx 600, timeout 2, grpc unavailable 1", the classes that occurred, most first. */
export function errorClasses(e: ArmErrors): string {
  return Object.keys(e.byClass)
    .filter((c) => e.byClass[c]! > 0)
    .sort((a, b) => e.byClass[b]! - e.byClass[a]!)
    .map((c) => `${c} ${e.byClass[c]}`)
    .join(", ");
}

/**
 * Refuses a comparison an arm did not serve: most requests failed on both arms (the workload),
 * or on the champion alone (no baseline), naming the share and the classes. The challenger
 * failing alone is judged by errorRegression: red, blocking.
 */
export function checkWorkloadAnswers(workload: string, rate: number, champion: ArmErrors, challenger: ArmErrors): void {
  const failing = (e: ArmErrors) => e.requests > 0 && e.errors > FAILING_SHARE * e.requests;
  const arm = (name: string, e: ArmErrors) =>
    `${name} ${percent(e.errors / e.requests)} of ${e.requests} (${errorClasses(e)})`;
  if (failing(champion) && !failing(challenger)) {
    throw new ChampionFailedError(
      `could not measure: the champion failed ${champion.errors} of ${champion.requests} requests of workload ${workload} @ ${rate} req/s (${errorClasses(champion)}), ` +
        `the challenger ${challenger.errors} of ${challenger.requests}: the champion did not serve this workload, so its latency is no baseline; promote a champion that serves it, or compare against the merge base (comparison_base: merge-base)`,
      `the champion failed ${champion.errors} of ${champion.requests} requests`,
    );
  }
  if (!failing(champion) || !failing(challenger)) return;
  throw new FailingWorkloadError(
    `workload ${workload} @ ${rate} req/s: most requests failed on both arms (${arm("champion", champion)}; ${arm("challenger", challenger)}): ` +
      "the workload does not fit the service (check its paths, methods, headers and body, or its gRPC methods and messages); a verdict would pass it as no change",
  );
}

function percent(share: number): string {
  const p = 100 * share;
  return `${p > 99.9 && p < 100 ? p.toFixed(2) : p.toFixed(1).replace(/\.0$/, "")}% failed`;
}

type Totals = Pick<ArmErrors, "requests" | "errors">;

export interface ErrorRegression {
  champion: number;
  challenger: number;
  p: number;
}

/**
 * The challenger's extra failures as a test: given the total number of failures, each is
 * equally likely to come from either arm (per request) if the builds do not differ.
 */
export function errorRegression(champion: Totals, challenger: Totals): ErrorRegression | null {
  if (challenger.errors <= champion.errors) return null;
  const share = challenger.requests / Math.max(1, champion.requests + challenger.requests);
  return {
    champion: champion.errors,
    challenger: challenger.errors,
    p: binomialUpperTail(challenger.errors, champion.errors + challenger.errors, share),
  };
}
