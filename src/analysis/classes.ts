// Each request class's paired difference beside the verdict (docs/design/0020-request-classes.md):
// a workload's single percentile dilutes a change to one kind of request (2% of reports slower
// moves a p99 made of /work requests not at all), so the report says which class moved. The
// verdict stays on the workload as a whole; the classes are the same estimator on each class's
// share of every kept pair, Holm-adjusted across the classes.
import constants from "../../benchmark-host/contract/schema/constants.json";
import type { Plan } from "../contract/plan";
import type { ClassSlice } from "../contract/result";
import { sampleBudget } from "../contract/rules";
import { type EstimatorKind, estimateLatency } from "./latency-estimator";
import type { SlicePair } from "./pairs";
import { tInterval } from "./pooled-quantile";
import { slicePercentileUs } from "./statistic";
import { holmAdjust } from "./tests";

export interface ClassEstimate {
  percentile: number;
  estimateMs: number;
  ciMs: [number, number];
  p: number;
  /** Holm-adjusted across the classes at this percentile. */
  holmP: number;
  estimator: EstimatorKind;
  /** Whether the interval, Holm-adjusted, excludes 0: the class moved. */
  moved: boolean;
}

export interface ClassComparison {
  /** requests[].name, else the method and path, or the gRPC method. */
  name: string;
  /** The entry's index in the workload's requests. */
  index: number;
  /** Requests answered or failed over the kept pairs, and those failed, per arm. */
  requests: { champion: number; challenger: number };
  errors: { champion: number; challenger: number };
  /** The SLO percentile the class is compared at (beside p50). */
  percentile: number;
  /** The median over the kept slices of the requests the class recorded in one. */
  recordedPerSlice: number;
  /** At the SLO percentile and at p50; null with `short` saying why. */
  slo: ClassEstimate | null;
  p50: ClassEstimate | null;
  /** Why a percentile has no number: too few of the class's requests per slice to read it from. */
  short: { slo: string | null; p50: string | null };
}

export interface ClassBreakdown {
  /** Sorted by how much each moved: the SLO estimate's size, else p50's. */
  classes: ClassComparison[];
  /** Why there is none (one entry, too many, or results without them); null when there is. */
  missing: string | null;
}

/** Each class's name: requests[].name, else its method and path or gRPC method; a repeated one is numbered. */
export function classNames(plan: Pick<Plan, "requests">): string[] {
  const seen = new Map<string, number>();
  return plan.requests.map((r) => {
    const base = r.name ?? (r.grpc ? r.grpc.method : `${r.method} ${r.path ?? ""}`);
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base} (${n})`;
  });
}

/** The class breakdown of a comparison's kept pairs at the confidence its verdict used. */
export function classBreakdown(
  plan: Pick<Plan, "requests">,
  pairs: readonly SlicePair[],
  percentile: number,
  confidence: number,
  rand: () => number,
): ClassBreakdown {
  const entries = plan.requests.length;
  if (entries < 2) return { classes: [], missing: "the workload has one request class: the verdict is its" };
  const withClasses = pairs.every(
    (p) => p.champion.classes?.length === entries && p.challenger.classes?.length === entries,
  );
  if (!withClasses || pairs.length < 2) {
    return {
      classes: [],
      missing:
        pairs.length < 2
          ? "fewer than 2 pairs"
          : `the slices carry no per-class records (a host older than them, or more than ${constants.max_classes} request classes)`,
    };
  }
  const names = classNames(plan);
  const unheld = names.map((name, i) => measureClass(name, i, pairs, percentile, confidence, rand));
  for (const at of ["slo", "p50"] as const) {
    const tested = unheld.filter((c) => c[at] !== null);
    const adjusted = holmAdjust(tested.map((c) => c[at]!.p));
    tested.forEach((c, i) => {
      const e = c[at]!;
      e.holmP = adjusted[i]!;
      e.moved = e.holmP < 1 - confidence && (e.ciMs[0] > 0 || e.ciMs[1] < 0);
    });
  }
  const size = (c: ClassComparison) => Math.abs((c.slo ?? c.p50)?.estimateMs ?? 0);
  return {
    classes: [...unheld].sort((a, b) => Number(moved(b)) - Number(moved(a)) || size(b) - size(a)),
    missing: null,
  };
}

/** Whether a class moved at either percentile. */
export function moved(c: ClassComparison): boolean {
  return !!(c.slo?.moved || c.p50?.moved);
}

function measureClass(
  name: string,
  index: number,
  pairs: readonly SlicePair[],
  percentile: number,
  confidence: number,
  rand: () => number,
): ClassComparison {
  const classPairs = pairs.map((p) => ({
    champion: p.champion.classes![index]!,
    challenger: p.challenger.classes![index]!,
  }));
  const sum = (arm: "champion" | "challenger", f: (c: ClassSlice) => number) =>
    classPairs.reduce((acc, p) => acc + f(p[arm]), 0);
  const failures = (c: ClassSlice) => c.completed - c.ok;
  const perSlice = median(classPairs.flatMap((p) => [p.champion.recorded, p.challenger.recorded]));
  const at = (q: number): { estimate: ClassEstimate | null; short: string | null } => {
    const budget = sampleBudget(q);
    if (perSlice < budget) {
      return {
        estimate: null,
        short: `${formatCount(perSlice)} of its requests per slice, fewer than the ${formatCount(budget)} a slice's p${q} is read from`,
      };
    }
    const d = classPairs.map((p) => (slicePercentileUs(p.challenger, q) - slicePercentileUs(p.champion, q)) / 1000);
    const e = estimateLatency(classPairs, d, q, 0, rand);
    const t = tInterval(e.estimateMs, e.seMs, e.df, confidence);
    return {
      estimate: {
        percentile: q,
        estimateMs: e.estimateMs,
        ciMs: [t.lo, t.hi],
        p: t.p,
        holmP: t.p,
        estimator: e.kind,
        moved: false,
      },
      short: null,
    };
  };
  const slo = at(percentile);
  const p50 = at(50);
  return {
    name,
    index,
    requests: { champion: sum("champion", (c) => c.completed), challenger: sum("challenger", (c) => c.completed) },
    errors: { champion: sum("champion", failures), challenger: sum("challenger", failures) },
    percentile,
    recordedPerSlice: perSlice,
    slo: slo.estimate,
    p50: p50.estimate,
    short: { slo: slo.short, p50: p50.short },
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const formatCount = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 1 });
