// npm run bench:sensitivity (step 2 of 2): judges the runs scripts/sensitivity-collect.mjs kept,
// with the product's own pair extraction (disturbed pairs dropped), interval and estimators, and
// prints the tables of docs/design/0012-slice-design.md: per design and estimator, the A/A
// false-label rate, the power at each extra cost, the interval's half-width as % of p99, its ratio
// to the sampling limit of the same requests, and the host time per gate, for single 90 s gates and
// for the gate that extends itself; the order's port bias at p50; the true shifts from the plain
// runs; and what a quieter host would reach, by simulation from this host's measured noise
// components.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeFromCompressedBase64, encodeIntoCompressedBase64, type JsHistogram } from "hdr-histogram-js";
import { mean, median, sampleVariance as variance } from "simple-statistics";
import { blocksLeft, extensionWanted } from "../src/analysis/extension";
import { hodgesLehmann } from "../src/analysis/hodges-lehmann";
import { estimateLatency } from "../src/analysis/latency-estimator";
import { extractPairs, isDisturbed, type SlicePair } from "../src/analysis/pairs";
import { tInterval } from "../src/analysis/pooled-quantile";
import { normalDraw, seededRandom } from "../src/analysis/random";
import { nominalAlphas } from "../src/analysis/sequential";
import { sliceHarrellDavisUs, slicePercentileUs } from "../src/analysis/statistic";
import { pairedT } from "../src/analysis/tests";
import { trimmedMean } from "../src/analysis/trimmed-mean";
import { GATE_MEASURED_SECONDS } from "../src/config/gate-config";
import { type LoadgenResult, parseResult, type Slice } from "../src/contract/result";

const dir = process.argv[2] ?? ".perf-gate/sensitivity";
const PERCENTILE = 99;
const CONFIDENCE = 0.95;
/**
 * Block thresholds the extending gate is played at, in µs: sensitivity-collect.mjs's config's (1% of
 * its 100 ms budget), and one about the interval's half-width, where extensions decide most.
 */
const THRESHOLDS_US = [1000, 300];
/** slices.max_extensions' default. */
const MAX_EXTENSIONS = 2;

interface Cell {
  name: string;
  /** uniform: every request /work; mixed: 2% of them the slow /report (sensitivity-collect.mjs). */
  profile: "uniform" | "mixed";
  /** The generator on CPU 0 and both builds on CPU 1 (perf-gate run's --loadgen-cpus, --arm-cpus). */
  placed: boolean;
  slice: number;
  order: string;
  shift: number;
  pairs: number;
  /** Each slice's unrecorded start, ms (slices.discard_ms; 200 before cells said). */
  discard_ms: number;
  wall_seconds: number;
  result: LoadgenResult;
}

type Estimator = {
  name: string;
  d: (p: SlicePair) => number;
  level: (s: Slice) => number;
  keep?: (p: SlicePair) => boolean;
};
/**
 * A stricter instrument: a pair counts only when the generator's own dispatch lag p99 stayed
 * under 0.25 ms in both slices (calm slices here read 30-100 µs; the product's rule drops a pair
 * past max(1 ms, 10% of the slice's pNN)). It asks whether the host's stalls that the product's
 * rule lets through are what widens the interval, and what dropping them would cost.
 */
const CALM_LAG_US = 250;
const calm = (p: SlicePair) =>
  p.champion.dispatch_lag_us.p99 <= CALM_LAG_US && p.challenger.dispatch_lag_us.p99 <= CALM_LAG_US;
const ln = Math.log;
const ESTIMATORS: Estimator[] = [
  {
    name: "HDR pNN (today)",
    d: (p) => slicePercentileUs(p.challenger, PERCENTILE) - slicePercentileUs(p.champion, PERCENTILE),
    level: (s) => slicePercentileUs(s, PERCENTILE),
  },
  {
    name: "Harrell-Davis",
    d: (p) => sliceHarrellDavisUs(p.challenger, PERCENTILE) - sliceHarrellDavisUs(p.champion, PERCENTILE),
    level: (s) => sliceHarrellDavisUs(s, PERCENTILE),
  },
  {
    name: "log HDR pNN",
    d: (p) => ln(slicePercentileUs(p.challenger, PERCENTILE) / slicePercentileUs(p.champion, PERCENTILE)),
    level: () => 1,
  },
  {
    name: "log Harrell-Davis",
    d: (p) => ln(sliceHarrellDavisUs(p.challenger, PERCENTILE) / sliceHarrellDavisUs(p.champion, PERCENTILE)),
    level: () => 1,
  },
  {
    name: `log HDR pNN, calm pairs (lag p99 ≤ ${CALM_LAG_US} µs)`,
    d: (p) => ln(slicePercentileUs(p.challenger, PERCENTILE) / slicePercentileUs(p.champion, PERCENTILE)),
    level: () => 1,
    keep: calm,
  },
];

function loadCells(): Cell[] {
  const root = join(dir, "cells");
  if (!existsSync(root)) throw new Error(`${root}: no cells; run scripts/sensitivity-collect.mjs first`);
  return readdirSync(root).flatMap((name) => {
    const resultFile = join(root, name, "result.json");
    if (!existsSync(resultFile)) return [];
    const meta = JSON.parse(readFileSync(join(root, name, "cell.json"), "utf8")) as Omit<Cell, "result">;
    const docs = JSON.parse(readFileSync(resultFile, "utf8")) as unknown[];
    return [
      {
        ...meta,
        profile: meta.profile ?? "uniform",
        placed: meta.placed ?? false,
        discard_ms: meta.discard_ms ?? 200,
        result: parseResult(resultFile, docs[0]),
      },
    ];
  });
}

/**
 * One gate's worth of pairs (90 s of slices): the long run cut into back-to-back blocks. Cut once
 * per cell: the slices are new objects, and each one's histogram is decoded once per object.
 */
const cut = new Map<Cell, LoadgenResult[]>();
function blocks(c: Cell): LoadgenResult[] {
  const cached = cut.get(c);
  if (cached) return cached;
  const per = Math.round(GATE_MEASURED_SECONDS / (2 * c.slice));
  const total = Math.max(...c.result.slices.map((s) => s.pair)) + 1;
  const out: LoadgenResult[] = [];
  for (let from = 0; from + per <= total; from += per) {
    const slices = c.result.slices
      .filter((s) => s.pair >= from && s.pair < from + per)
      .map((s) => ({ ...s, pair: s.pair - from }));
    out.push({ ...c.result, plan: { ...c.result.plan, pairs: per }, slices });
  }
  cut.set(c, out);
  return out;
}

type Label = "red" | "green" | "grey" | "not measured";

interface Judged {
  label: Label;
  halfWidthPercent: number;
}

/** A block's kept pairs by the product's rules (disturbed pairs dropped); null when over half were disturbed. */
function keptPairs(block: LoadgenResult, keep: (p: SlicePair) => boolean = () => true): SlicePair[] | null {
  const extracted = extractPairs("block", block, PERCENTILE);
  const pairs = extracted.pairs.filter(keep);
  const disturbed = extracted.dropped.filter(isDisturbed).length + extracted.pairs.length - pairs.length;
  return disturbed > (extracted.pairs.length + extracted.dropped.length) / 2 || pairs.length < 2 ? null : pairs;
}

/** A block's label by the product's rules: over half its pairs disturbed is no verdict. */
function judge(block: LoadgenResult, m: Method): Judged {
  const pairs = keptPairs(block, m.keep);
  if (!pairs) return { label: "not measured", halfWidthPercent: NaN };
  const ci = m.of(pairs, CONFIDENCE);
  const halfWidthPercent = (100 * (ci.hi - ci.lo)) / 2 / m.level(pairs);
  return { label: ci.lo > 0 ? "red" : ci.hi < 0 ? "green" : "grey", halfWidthPercent };
}

/** Every kept pair of a cell, for the resampled rates. */
function cellPairs(c: Cell, m: Method): SlicePair[] {
  return blocks(c).flatMap((b) => extractPairs("block", b, PERCENTILE).pairs.filter(m.keep ?? (() => true)));
}

/**
 * The gate that extends itself, on a cell's consecutive blocks: a gate starts at a block and
 * pools the next while the product's rule wants it (src/analysis/extension.ts), up to
 * MAX_EXTENSIONS, each look at its group-sequential level, the pooled p99 estimate.
 */
function extendingGates(c: Cell, thresholdUs: number): { label: Label; blocks: number }[] {
  const bs = blocks(c);
  const gates: { label: Label; blocks: number }[] = [];
  for (let from = 0; from < bs.length; ) {
    const next = (used: number) => (from + used < bs.length ? keptPairs(bs[from + used]!) : undefined);
    const g = extendingGate(next, thresholdUs);
    gates.push(g);
    from += g.blocks;
  }
  return gates;
}

/**
 * One extending gate over the blocks next(0), next(1), …: undefined when none is left, null for
 * one the host could not measure (the gate ends there, its earlier looks standing).
 */
function extendingGate(
  next: (used: number) => SlicePair[] | null | undefined,
  thresholdUs: number,
): { label: Label; blocks: number } {
  const pairs: SlicePair[] = [];
  const looks: { pairs: number }[] = [];
  let label: Label = "not measured";
  let used = 0;
  for (let kept = next(0); kept !== undefined; kept = next(used)) {
    used++;
    if (!kept) break;
    pairs.push(...kept.map((p) => ({ ...p, pair: pairs.length + p.pair })));
    looks.push({ pairs: pairs.length });
    const e = estimateLatency(pairs, pairs.map(usDifference), PERCENTILE, 0, () => 0);
    const level = nominalAlphas(
      1 - CONFIDENCE,
      looks.map((l) => l.pairs),
    ).at(-1)!;
    const ci = tInterval(e.estimateMs * 1000, e.seMs * 1000, e.df, 1 - level);
    label = ci.lo > 0 ? "red" : ci.hi < 0 ? "green" : "grey";
    const look = {
      ciMs: [ci.lo, ci.hi] as [number, number],
      thresholdMs: thresholdUs,
      estimateMs: e.estimateMs * 1000,
      seMs: e.seMs * 1000,
      pairs: pairs.length,
      lookHistory: looks,
    };
    if (!extensionWanted(look, 1 - CONFIDENCE, blocksLeft(MAX_EXTENSIONS, used - 1, looks.length))) break;
  }
  return { label, blocks: used };
}

/** Resamples of a cell's blocks for a resampled rate's interval, and extending gates drawn per rate. */
const BLOCK_RESAMPLES = 20;
const EXTENDING_DRAWS = 100;

const usDifference = (p: SlicePair) =>
  (slicePercentileUs(p.challenger, PERCENTILE) - slicePercentileUs(p.champion, PERCENTILE)) / 1000;

const pct = (x: number) => (Number.isNaN(x) ? "–" : `${(100 * x).toFixed(0)}%`);

/** Wilson's 95% interval for k of n. */
function wilson(k: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const z = 1.96;
  const p = k / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

const rate = (k: number, n: number) =>
  n === 0 ? "–" : `${k}/${n} (${pct(k / n)}, CI ${pct(wilson(k, n)[0])}-${pct(wilson(k, n)[1])})`;

/**
 * The label rate of the design when its n pairs are drawn from all the cell's kept pairs: many
 * synthetic gates from one cell's measurements. It ignores drift between pairs, so it is a
 * second reading beside the measured blocks, not a replacement.
 */
function resampledRate(
  pairs: readonly SlicePair[],
  n: number,
  m: Method,
  wanted: (lo: number, hi: number) => boolean,
): number {
  if (pairs.length < 2) return NaN; // a cell the host could not measure
  const rand = seededRandom(13);
  let hits = 0;
  for (let k = 0; k < m.draws; k++) {
    // Each drawn pair its own: the pooled estimator's jackknife leaves pairs out by their index.
    const drawn = Array.from({ length: n }, (_, i) => ({ ...pairs[Math.floor(rand() * pairs.length)]!, pair: i }));
    const ci = m.of(drawn, CONFIDENCE);
    if (wanted(ci.lo, ci.hi)) hits++;
  }
  return hits / m.draws;
}

type Interval = { name: string; of: (d: number[], confidence: number) => { lo: number; hi: number } };
const INTERVALS: Interval[] = [
  { name: "t", of: (d, c) => pairedT(d, c).ci },
  { name: "HL", of: (d, c) => hodgesLehmann(d, c) },
  { name: "trimmed 10%", of: (d, c) => trimmedMean(d, c, 0.1) },
  { name: "trimmed 20%", of: (d, c) => trimmedMean(d, c, 0.2) },
];

/** An estimator and its interval, from a gate's kept pairs (µs). */
interface Method {
  estimator: string;
  interval: string;
  keep?: (p: SlicePair) => boolean;
  of: (pairs: readonly SlicePair[], confidence: number) => { lo: number; hi: number };
  /** The champion's level the half-width is a share of. */
  level: (pairs: readonly SlicePair[]) => number;
  /** Resampled gates drawn per cell. */
  draws: number;
}

/** Each pair's difference is read once per estimator: Harrell-Davis reads the tail of two histograms. */
function perPair(e: Estimator): (p: SlicePair) => number {
  const seen = new WeakMap<Slice, number>();
  return (p) => {
    let d = seen.get(p.challenger);
    if (d === undefined) {
      d = e.d(p);
      seen.set(p.challenger, d);
    }
    return d;
  };
}

const METHODS: Method[] = [
  ...ESTIMATORS.flatMap((e) => {
    const d = perPair(e);
    return INTERVALS.map(
      (i): Method => ({
        estimator: e.name,
        interval: i.name,
        ...(e.keep ? { keep: e.keep } : {}),
        draws: 1000,
        of: (pairs, c) => i.of(pairs.map(d), c),
        level: (pairs) => mean(pairs.map((p) => e.level(p.champion))),
      }),
    );
  }),
  {
    estimator: "pooled p99 per arm (the product's)",
    interval: "jackknife over pairs, t",
    draws: 300,
    of: (pairs, c) => {
      const e = estimateLatency(pairs, pairs.map(usDifference), PERCENTILE, 0, () => 0);
      const ci = tInterval(e.estimateMs * 1000, e.seMs * 1000, e.df, c);
      return { lo: ci.lo, hi: ci.hi };
    },
    level: (pairs) =>
      (estimateLatency(pairs, pairs.map(usDifference), PERCENTILE, 0, () => 0).pooledMs?.champion ?? NaN) * 1000,
  },
];

/** The interval's half-width over the same requests' sampling limit (no host noise), per measured block of a cell. */
function efficiencyRatios(c: Cell): number[] {
  return blocks(c).flatMap((b) => {
    const pairs = keptPairs(b);
    if (!pairs) return [];
    const e = estimateLatency(pairs, pairs.map(usDifference), PERCENTILE, 100, seededRandom(17));
    return e.samplingSeMs ? [e.seMs / e.samplingSeMs] : [];
  });
}

const cells = loadCells();
const designKey = (c: Cell) =>
  `${c.slice} s x ${Math.round(GATE_MEASURED_SECONDS / (2 * c.slice))}, ${c.order}${c.discard_ms === 200 ? "" : `, discard ${c.discard_ms} ms`}${c.profile === "uniform" ? "" : `, ${c.profile} workload`}${c.placed ? ", placed" : ""}`;
const designs = [...new Set(cells.filter((c) => !c.name.startsWith("truth")).map(designKey))];

console.log(
  `# Sensitivity at ${cells[0]?.result.plan.rate ?? "?"} req/s, p${PERCENTILE}, ${GATE_MEASURED_SECONDS} s of slices per gate (${dir})\n`,
);
console.log(
  "| design | estimator | interval | extra cost | gates | labels (measured) | resampled | half-width, % of p99 (median) | host s/gate |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
/** A gate's host time: its share of the run's start-up, and its slices. */
const hostSecondsPerBlock = (c: Cell) => c.wall_seconds - 2 * c.pairs * c.slice + GATE_MEASURED_SECONDS;
for (const design of designs) {
  for (const m of METHODS) {
    for (const c of cells.filter((x) => designKey(x) === design).sort((a, b) => a.shift - b.shift)) {
      const bs = blocks(c);
      const judged = bs.map((b) => judge(b, m));
      const measured = judged.filter((j) => j.label !== "not measured");
      const aa = c.shift === 0;
      const hits = measured.filter((j) => (aa ? j.label !== "grey" : j.label === "red")).length;
      const n = Math.round(GATE_MEASURED_SECONDS / (2 * c.slice));
      const resampled = resampledRate(cellPairs(c, m), n, m, aa ? (lo, hi) => lo > 0 || hi < 0 : (lo) => lo > 0);
      console.log(
        `| ${design} | ${m.estimator} | ${m.interval} | ${aa ? "A/A" : `+${c.shift}%`} | ${bs.length} (${bs.length - measured.length} not measured) | ${aa ? "false " : "red "}${rate(hits, measured.length)} | ${pct(resampled)} | ${measured.length > 0 ? median(measured.map((j) => j.halfWidthPercent)).toFixed(1) : "–"} | ${hostSecondsPerBlock(c).toFixed(0)} |`,
      );
    }
  }
}

// The gate that extends itself, on the same blocks, and each interval against its sampling limit.
for (const thresholdUs of THRESHOLDS_US) {
  console.log(
    `\n## The extending gate (pooled p99, up to ${MAX_EXTENSIONS} extensions at a ${thresholdUs / 1000} ms block threshold) and the sampling limit\n`,
  );
  console.log(
    "| design | extra cost | gates | labels | host s/gate (mean, max) | half-width / sampling limit (median, one 90 s gate) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const c of cells
    .filter((x) => !x.name.startsWith("truth"))
    .sort((a, b) => designKey(a).localeCompare(designKey(b)) || a.shift - b.shift)) {
    const gates = extendingGates(c, thresholdUs).filter((g) => g.label !== "not measured");
    const aa = c.shift === 0;
    const hits = gates.filter((g) => (aa ? g.label !== "grey" : g.label === "red")).length;
    const seconds = gates.map((g) => g.blocks * hostSecondsPerBlock(c));
    const ratios = efficiencyRatios(c);
    console.log(
      `| ${designKey(c)} | ${aa ? "A/A" : `+${c.shift}%`} | ${gates.length} | ${aa ? "false " : "red "}${rate(hits, gates.length)} | ${seconds.length > 0 ? `${mean(seconds).toFixed(0)}, ${Math.max(...seconds).toFixed(0)}` : "–"} | ${ratios.length > 0 ? median(ratios).toFixed(2) : "–"} |`,
    );
  }
}

// The defaults before and after: the last default (per-slice HDR p99, Student t, one 95% look)
// and the product's gate (pooled p99 with the jackknife over pairs, 97.5% on its first look,
// extending itself), on the same cells. Resampled rates come with an interval from resampling the
// cell's blocks (the measurement's own uncertainty, which the draws within it do not show).
const before = METHODS.find((m) => m.estimator === "HDR pNN (today)" && m.interval === "t")!;
const pooled = METHODS.find((m) => m.estimator.startsWith("pooled"))!;
// The defaults' design alone (0.5 s slices, 200 ms discarded, the mixed workload): each row
// resamples whole extending gates, minutes of CPU per design.
const DEFAULTS_DESIGN = "0.5 s x 90, abba, mixed workload";
for (const design of designs.filter((d) => d === DEFAULTS_DESIGN)) {
  const designCells = cells.filter((c) => designKey(c) === design).sort((a, b) => a.shift - b.shift);
  if (!designCells.some((c) => c.shift === 0) || !designCells.some((c) => c.shift > 0)) continue;
  console.log(`\n## Before and after: ${design}, ${THRESHOLDS_US[0]! / 1000} ms block threshold\n`);
  console.log(
    "| gate | extra cost | gates | labels (measured) | resampled [blocks resampled] | half-width, % of p99 (median) | half-width / sampling limit (median) | host s/gate (mean, max) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const c of designCells) {
    const aa = c.shift === 0;
    const n = Math.round(GATE_MEASURED_SECONDS / (2 * c.slice));
    const wanted = aa ? (l: Label) => l === "red" || l === "green" : (l: Label) => l === "red";
    const per = hostSecondsPerBlock(c);
    // Before: one gate per block.
    const judged = blocks(c)
      .map((b) => judge(b, before))
      .filter((j) => j.label !== "not measured");
    const beforeDraw = (ps: readonly SlicePair[]) =>
      resampledRate(ps, n, before, aa ? (lo, hi) => lo > 0 || hi < 0 : (lo) => lo > 0);
    console.log(
      `| per-slice p99, t, one look (before) | ${aa ? "A/A" : `+${c.shift}%`} | ${judged.length} | ${rate(judged.filter((j) => wanted(j.label)).length, judged.length)} | ${withBlockInterval(c, before, beforeDraw)} | ${judged.length > 0 ? median(judged.map((j) => j.halfWidthPercent)).toFixed(1) : "–"} | – | ${per.toFixed(0)}, ${per.toFixed(0)} |`,
    );
    // After: the product's extending gate.
    const gates = extendingGates(c, THRESHOLDS_US[0]!).filter((g) => g.label !== "not measured");
    const firstLooks = blocks(c)
      .map((b) => judge(b, pooled))
      .filter((j) => j.label !== "not measured");
    const seconds = gates.map((g) => g.blocks * per);
    const afterDraw = (ps: readonly SlicePair[]) => resampledExtendingRate(ps, n, THRESHOLDS_US[0]!, wanted);
    const ratios = efficiencyRatios(c);
    console.log(
      `| pooled p99, jackknife, extending (after) | ${aa ? "A/A" : `+${c.shift}%`} | ${gates.length} | ${rate(gates.filter((g) => wanted(g.label)).length, gates.length)} | ${withBlockInterval(c, pooled, afterDraw)} | ${firstLooks.length > 0 ? median(firstLooks.map((j) => j.halfWidthPercent)).toFixed(1) : "–"} | ${ratios.length > 0 ? median(ratios).toFixed(2) : "–"} | ${seconds.length > 0 ? `${mean(seconds).toFixed(0)}, ${Math.max(...seconds).toFixed(0)}` : "–"} |`,
    );
  }
}

/** A resampled rate, and its 95% interval over resamples of the cell's blocks (each block's kept pairs a cluster). */
function withBlockInterval(c: Cell, m: Method, rateOf: (pairs: readonly SlicePair[]) => number): string {
  const kept = blocks(c)
    .map((b) => keptPairs(b, m.keep))
    .filter((p): p is SlicePair[] => p !== null);
  if (kept.length === 0) return "–";
  const point = rateOf(kept.flat());
  const rand = seededRandom(29);
  const rates: number[] = [];
  for (let r = 0; r < BLOCK_RESAMPLES; r++) {
    rates.push(rateOf(Array.from({ length: kept.length }, () => kept[Math.floor(rand() * kept.length)]!).flat()));
  }
  rates.sort((a, b) => a - b);
  return `${pct(point)} [${pct(rates[Math.floor(0.025 * (BLOCK_RESAMPLES - 1))]!)}, ${pct(rates[Math.ceil(0.975 * (BLOCK_RESAMPLES - 1))]!)}]`;
}

/** The extending gate's label rate when every block it measures is n pairs drawn from the cell's kept pairs. */
function resampledExtendingRate(
  pairs: readonly SlicePair[],
  n: number,
  thresholdUs: number,
  wanted: (l: Label) => boolean,
): number {
  if (pairs.length < 2) return NaN;
  const rand = seededRandom(31);
  let hits = 0;
  for (let k = 0; k < EXTENDING_DRAWS; k++) {
    const draw = () => Array.from({ length: n }, (_, i) => ({ ...pairs[Math.floor(rand() * pairs.length)]!, pair: i }));
    if (wanted(extendingGate((used) => (used <= MAX_EXTENSIONS ? draw() : undefined), thresholdUs).label)) hits++;
  }
  return hits / EXTENDING_DRAWS;
}

// The order's port bias at p50 (and the SLO percentile): every A/A pair of a cell, and split by
// which arm the pair measured first.
console.log("\n## A/A port bias by order (challenger − champion, µs; t interval over all kept pairs)\n");
console.log("| design | pairs | p50 | p99 | p50, champion first | p50, challenger first |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const c of cells.filter((x) => x.shift === 0)) {
  const pairs = blocks(c).flatMap((b) => extractPairs("block", b, PERCENTILE).pairs);
  const at = (ps: SlicePair[], p: number) =>
    ps.map((x) => slicePercentileUs(x.challenger, p) - slicePercentileUs(x.champion, p));
  const show = (d: number[]) => {
    if (d.length < 2) return "–";
    const t = pairedT(d, CONFIDENCE);
    return `${t.mean.toFixed(1)} [${t.ci.lo.toFixed(1)}, ${t.ci.hi.toFixed(1)}]${t.ci.lo > 0 || t.ci.hi < 0 ? " biased" : ""}`;
  };
  const first = pairs.filter((x) => x.champion.index < x.challenger.index);
  const second = pairs.filter((x) => x.champion.index > x.challenger.index);
  console.log(
    `| ${designKey(c)} | ${pairs.length} | ${show(at(pairs, 50))} | ${show(at(pairs, PERCENTILE))} | ${show(at(first, 50))} | ${show(at(second, 50))} |`,
  );
}

// The truth: long plain runs, each arm's slices pooled into one histogram.
console.log("\n## True shifts (plain runs: 10 s slices pooled per arm)\n");
console.log(
  "| workload | placed | extra cost | requests per arm | p50 champion → challenger | p99 champion → challenger | p99 shift | service CPU per request |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const c of cells
  .filter((x) => x.name.startsWith("truth"))
  .sort((a, b) => a.profile.localeCompare(b.profile) || Number(a.placed) - Number(b.placed) || a.shift - b.shift)) {
  const pooled = (arm: Slice["arm"]) => {
    const slices = c.result.slices.filter((s) => s.arm === arm && s.valid);
    const h = decodeFromCompressedBase64(slices[0]!.histogram);
    for (const s of slices.slice(1)) h.add(decodeFromCompressedBase64(s.histogram));
    const cpu = slices.map((s) => s.service_cpu_us_per_request).filter((x): x is number => x !== undefined);
    return { h, cpu: cpu.length > 0 ? mean(cpu) : NaN };
  };
  const a = pooled("champion");
  const b = pooled("challenger");
  const p = (h: typeof a.h, q: number) => h.getValueAtPercentile(q);
  const shift = p(b.h, PERCENTILE) / p(a.h, PERCENTILE) - 1;
  const cpu = Number.isNaN(a.cpu)
    ? "not accounted"
    : `${a.cpu.toFixed(0)} → ${b.cpu.toFixed(0)} µs (${(100 * (b.cpu / a.cpu - 1)).toFixed(1)}%)`;
  console.log(
    `| ${c.profile} | ${c.placed ? "yes" : "no"} | +${c.shift}% | ${a.h.totalCount} | ${p(a.h, 50)} → ${p(b.h, 50)} µs | ${p(a.h, PERCENTILE)} → ${p(b.h, PERCENTILE)} µs | ${(100 * shift).toFixed(1)}% | ${cpu} |`,
  );
}

// A quieter host, by simulation: the A/A differences of the likeliest default split into the part
// a slice's own finite sample explains (each calm slice's histogram resampled) and the rest, the
// machine's noise; then power at each shift with that rest scaled down.
for (const aaCell of cells.filter((c) => c.name.startsWith("aa-1.5-abba"))) {
  const e = ESTIMATORS[3]!; // log Harrell-Davis: the least noisy per-slice statistic, for the components
  const d = blocks(aaCell).flatMap((b) => extractPairs("block", b, PERCENTILE).pairs.map(e.d));
  const total = variance(d);
  const sampling = samplingVariance(aaCell);
  const machine = Math.max(0, total - 2 * sampling);
  // A slice's sampling variance goes as 1/(requests it records): shorter slices record fewer.
  const recordedAt = (seconds: number) =>
    aaCell.result.plan.rate * (seconds - aaCell.result.plan.slice_warmup_ms / 1000);
  const measuredRecorded = recordedAt(aaCell.slice);
  console.log(`\n## A quieter host, by simulation (from ${aaCell.name}, ${e.name})\n`);
  console.log(
    `sd of the paired difference: ${(100 * Math.sqrt(total)).toFixed(1)}% of p99; of it, each slice's finite sample explains sd ${(100 * Math.sqrt(2 * sampling)).toFixed(1)}% and this machine's noise the rest, sd ${(100 * Math.sqrt(machine)).toFixed(1)}%.\n`,
  );
  console.log("| machine noise left | pairs x slice | power at +2% | at +5% | at +10% |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const left of [1, 0.25, 0.1, 0]) {
    for (const n of [30, 60, 90]) {
      const sd = Math.sqrt(
        (2 * sampling * measuredRecorded) / recordedAt(GATE_MEASURED_SECONDS / (2 * n)) + left * machine,
      );
      // A shift of the nominal size at p99: the plain runs' pooled p99 is itself too noisy here to stand in for it.
      const cellPower = (shift: number) => simulatedPower(ln(1 + shift / 100), sd, n);
      console.log(
        `| ${pct(left)} | ${n} x ${(GATE_MEASURED_SECONDS / (2 * n)).toFixed(2)} s | ${pct(cellPower(2))} | ${pct(cellPower(5))} | ${pct(cellPower(10))} |`,
      );
    }
  }
}

/** The variance a slice's log Harrell-Davis estimate has from its finite sample alone: its histogram resampled. */
function samplingVariance(c: Cell): number {
  const rand = seededRandom(7);
  const per: number[] = [];
  for (const s of c.result.slices.filter((x) => x.valid).slice(0, 40)) {
    const h = decodeFromCompressedBase64(s.histogram);
    const values: number[] = [];
    const it = (h as JsHistogram).recordedValuesIterator;
    it.reset();
    while (it.hasNext()) {
      const v = it.next();
      for (let k = 0; k < v.countAtValueIteratedTo; k++) values.push(v.valueIteratedTo);
    }
    const stats: number[] = [];
    for (let r = 0; r < 30; r++) {
      const copy = decodeFromCompressedBase64(s.histogram);
      copy.reset();
      for (let k = 0; k < values.length; k++) copy.recordValue(values[Math.floor(rand() * values.length)]!);
      stats.push(ln(sliceHarrellDavisUs({ ...s, histogram: encodeIntoCompressedBase64(copy) }, PERCENTILE)));
    }
    per.push(variance(stats));
  }
  return mean(per);
}

function simulatedPower(shift: number, sd: number, n: number, draws = 4000): number {
  const rand = seededRandom(11);
  let red = 0;
  for (let k = 0; k < draws; k++) {
    if (
      pairedT(
        Array.from({ length: n }, () => shift + sd * normalDraw(rand)),
        CONFIDENCE,
      ).ci.lo > 0
    )
      red++;
  }
  return red / draws;
}
