// `perf-gate capacity`: capacity on paper for a config (docs/design/0027-capacity-on-paper.md):
// the host time of its gates from the planned runs, and how long gates wait for a host of a pool
// of 1, 2, 3… hosts at a range of gate rates. Nothing is measured: it is the arithmetic a team
// sizes a pool with before it buys one.
import { gateHostTime, hostsNeeded, queueEstimate, runSeconds } from "../analysis/capacity";
import { parseConfig, planRuns, sliceDesign } from "../config/gate-config";
import { comparisonKey } from "../contract/rules";
import { type CapacityPlan, capacityMarkdown } from "../report/capacity";
import { readText } from "./host-flags";
import { numberOption, parseCommandLine, UsageError } from "./usage";

/** One run's overhead on the host, measured with the example service (docs/design/0027-capacity-on-paper.md). */
const RUN_OVERHEAD_SECONDS = 2;
/**
 * The share of possible extensions a gate takes: 0.2 is the extending gate's simulated host time
 * for unchanged builds at its worst threshold (125 s for 90, docs/design/0009-extending-gate.md).
 */
const EXTENSION_RATE = 0.2;
/** From a host coming free to a waiting gate's run starting there, measured in the pool's test (docs/design/0027-capacity-on-paper.md). */
const LANDING_SECONDS = 3;

export const capacityUsage = `usage: perf-gate capacity [options]
  --config FILE              the gate config (default .github/perf-gate.yml)
  --gates-per-day LIST       gates a busy day, pushes and reruns included (default 10,20,40,80,160)
  --hosts LIST               pool sizes to compare (default 1,2,3,4)
  --busy-hours H             the hours of the day the gates arrive in (default 8)
  --promotions-per-day N     merges a day, each an A/A check on every host (default 5)
  --run-overhead-seconds S   what each run holds its host besides warm-up and slices: the wait
                             for quiet CPUs, the arms' starts and health checks (default ${RUN_OVERHEAD_SECONDS};
                             read yours in a run's log: perf-host wait RUN-ID)
  --extension-rate X         the share of the possible extensions gates take (default ${EXTENSION_RATE})
  --landing-seconds S        from a host coming free to a waiting gate's run starting there
                             (default ${LANDING_SECONDS}: it looks, deploys and starts)
  --max-wait-minutes M       the mean wait the last column sizes the pool for (default 5)
  --json                     print the numbers as JSON instead of Markdown
  -h, --help                 this text
exit codes: 0, 2 error (a bad config or option)`;

export function capacityCommand(argv: string[], out: (line: string) => void): number {
  const { values: v } = parseCommandLine(
    {
      args: argv,
      options: {
        config: { type: "string", default: ".github/perf-gate.yml" },
        "gates-per-day": { type: "string", default: "10,20,40,80,160" },
        hosts: { type: "string", default: "1,2,3,4" },
        "busy-hours": { type: "string", default: "8" },
        "promotions-per-day": { type: "string", default: "5" },
        "run-overhead-seconds": { type: "string", default: String(RUN_OVERHEAD_SECONDS) },
        "extension-rate": { type: "string", default: String(EXTENSION_RATE) },
        "landing-seconds": { type: "string", default: String(LANDING_SECONDS) },
        "max-wait-minutes": { type: "string", default: "5" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    },
    capacityUsage,
  );
  if (v.help) {
    out(capacityUsage);
    return 0;
  }
  const plan = capacityPlan(v.config, parseConfig(readText(v.config, "--config", capacityUsage), v.config), {
    gatesPerDay: list(v, "gates-per-day", 0, 1e5),
    hosts: list(v, "hosts", 1, 64).map((n) => {
      if (!Number.isInteger(n)) throw new UsageError(`--hosts: whole numbers of hosts, got ${n}`, capacityUsage);
      return n;
    }),
    busyHours: bounded(v, "busy-hours", 0.5, 24),
    promotionsPerDay: bounded(v, "promotions-per-day", 0, 1000),
    runOverheadSeconds: bounded(v, "run-overhead-seconds", 0, 3600),
    extensionRate: bounded(v, "extension-rate", 0, 1),
    landingSeconds: bounded(v, "landing-seconds", 0, 3600),
    maxWaitMinutes: bounded(v, "max-wait-minutes", 0, 1440),
  });
  out(v.json ? JSON.stringify(plan, null, 2) : capacityMarkdown(plan));
  return 0;
}

interface Assumptions {
  gatesPerDay: number[];
  hosts: number[];
  busyHours: number;
  promotionsPerDay: number;
  runOverheadSeconds: number;
  extensionRate: number;
  landingSeconds: number;
  maxWaitMinutes: number;
}

export function capacityPlan(source: string, config: ReturnType<typeof parseConfig>, a: Assumptions): CapacityPlan {
  const planned = planRuns(config, {}, 0);
  const shapes = planned.map((r) => ({
    key: comparisonKey(r.workload, r.rate),
    warmupSeconds: r.request.loadgen.warmup_seconds ?? config.warmup_seconds,
    sliceSeconds: r.request.loadgen.slice_seconds,
    pairs: r.request.loadgen.pairs,
  }));
  const overheads = { runSeconds: a.runOverheadSeconds };
  const gate = gateHostTime(shapes, {
    ...overheads,
    maxExtensions: config.slices.max_extensions,
    extensionRate: a.extensionRate,
  });
  const first = planned[0]!;
  const verify = {
    warmupSeconds: config.warmup_seconds,
    sliceSeconds: sliceDesign(config, first.rate).seconds,
    pairs: config.promotion.verify_pairs,
  };
  const promotionSeconds = runSeconds(verify, overheads);
  const reservedShare = Math.min(0.99, (a.promotionsPerDay * promotionSeconds) / (a.busyHours * 3600));
  // What the queue sees at a day's number of gates, whatever the number of hosts.
  const load = (gatesPerDay: number) => ({
    arrivalsPerHour: gatesPerDay / a.busyHours,
    meanSeconds: gate.meanSeconds,
    varianceSeconds2: gate.varianceSeconds2,
    landingSeconds: a.landingSeconds,
    reservedShare,
  });
  return {
    config: source,
    runs: shapes.map((r, i) => ({ ...r, seconds: gate.runs[i]! })),
    runOverheadSeconds: a.runOverheadSeconds,
    gate,
    maxExtensions: config.slices.max_extensions,
    extensionRate: a.extensionRate,
    promotion: { key: comparisonKey(first.workload, first.rate), pairs: verify.pairs, seconds: promotionSeconds },
    promotionsPerDay: a.promotionsPerDay,
    busyHours: a.busyHours,
    landingSeconds: a.landingSeconds,
    maxWaitMinutes: a.maxWaitMinutes,
    rows: a.gatesPerDay.map((gatesPerDay) => ({
      gatesPerDay,
      cells: a.hosts.map((hosts) => ({ hosts, estimate: queueEstimate({ ...load(gatesPerDay), hosts }) })),
      hostsNeeded: hostsNeeded(load(gatesPerDay), a.maxWaitMinutes * 60),
    })),
  };
}

function bounded(v: Record<string, unknown>, flag: string, lo: number, hi: number): number {
  const n = numberOption(flag, v[flag], capacityUsage)!;
  if (n < lo || n > hi)
    throw new UsageError(`--${flag}: expected a number from ${lo} to ${hi}, got ${n}`, capacityUsage);
  return n;
}

function list(v: Record<string, unknown>, flag: string, lo: number, hi: number): number[] {
  const parts = String(v[flag]).split(",");
  if (parts.length > 20) throw new UsageError(`--${flag}: at most 20 values`, capacityUsage);
  return parts.map((p) => bounded({ [flag]: p.trim() }, flag, lo, hi));
}
