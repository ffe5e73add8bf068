// npm run bench:sensitivity (step 2 of 2): judges the runs scripts/sensitivity-collect.mjs kept,
// with the product's own pair extraction (disturbed pairs dropped), interval and estimators, and
// prints issue 13's tables: per design and per-slice estimator, the A/A false-label rate, the
// power at each extra cost, the interval's half-width as % of p99 and the host time per gate;
// the order's port bias at p50; the true shifts from the plain runs; and what a quieter host
// would reach, by simulation from this host's measured noise components.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { decodeFromCompressedBase64, encodeIntoCompressedBase64, type JsHistogram } from "hdr-histogram-js";
import { mean, median, sampleVariance as variance } from "simple-statistics";
import { extractPairs, isDisturbed, type SlicePair } from "../src/analysis/pairs";
import { normalDraw, seededRandom } from "../src/analysis/random";
import { slicePercentileUs, sliceHarrellDavisUs } from "../src/analysis/statistic";
import { hodgesLehmann } from "../src/analysis/hodges-lehmann";
import { trimmedMean } from "../src/analysis/trimmed-mean";
import { pairedT } from "../src/analysis/tests";
import { GATE_MEASURED_SECONDS } from "../src/config";
import { parseResult, type LoadgenResult, type Slice } from "../src/contract/result";

const dir = process.argv[2] ?? ".perf-gate/sensitivity";
const PERCENTILE = 99;
const CONFIDENCE = 0.95;

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
  wall_seconds: number;
  result: LoadgenResult;
}

type Estimator = { name: string; d: (p: SlicePair) => number; level: (s: Slice) => number; keep?: (p: SlicePair) => boolean };
/**
 * A stricter instrument: a pair counts only when the generator's own dispatch lag p99 stayed
 * under 0.25 ms in both slices (calm slices here read 30-100 µs; the product's rule drops a pair
 * past max(1 ms, 10% of the slice's pNN)). It asks whether the host's stalls that the product's
 * rule lets through are what widens the interval, and what dropping them would cost.
 */
const CALM_LAG_US = 250;
const calm = (p: SlicePair) => p.champion.dispatch_lag_us.p99 <= CALM_LAG_US && p.challenger.dispatch_lag_us.p99 <= CALM_LAG_US;
const ln = Math.log;
const ESTIMATORS: Estimator[] = [
  { name: "HDR pNN (today)", d: (p) => slicePercentileUs(p.challenger, PERCENTILE) - slicePercentileUs(p.champion, PERCENTILE), level: (s) => slicePercentileUs(s, PERCENTILE) },
  { name: "Harrell-Davis", d: (p) => sliceHarrellDavisUs(p.challenger, PERCENTILE) - sliceHarrellDavisUs(p.champion, PERCENTILE), level: (s) => sliceHarrellDavisUs(s, PERCENTILE) },
  { name: "log HDR pNN", d: (p) => ln(slicePercentileUs(p.challenger, PERCENTILE) / slicePercentileUs(p.champion, PERCENTILE)), level: () => 1 },
  { name: "log Harrell-Davis", d: (p) => ln(sliceHarrellDavisUs(p.challenger, PERCENTILE) / sliceHarrellDavisUs(p.champion, PERCENTILE)), level: () => 1 },
  { name: `log HDR pNN, calm pairs (lag p99 ≤ ${CALM_LAG_US} µs)`, d: (p) => ln(slicePercentileUs(p.challenger, PERCENTILE) / slicePercentileUs(p.champion, PERCENTILE)), level: () => 1, keep: calm },
];

function loadCells(): Cell[] {
  const root = join(dir, "cells");
  if (!existsSync(root)) throw new Error(`${root}: no cells; run scripts/sensitivity-collect.mjs first`);
  return readdirSync(root).flatMap((name) => {
    const resultFile = join(root, name, "result.json");
    if (!existsSync(resultFile)) return [];
    const meta = JSON.parse(readFileSync(join(root, name, "cell.json"), "utf8")) as Omit<Cell, "result">;
    const docs = JSON.parse(readFileSync(resultFile, "utf8")) as unknown[];
    return [{ ...meta, profile: meta.profile ?? "uniform", placed: meta.placed ?? false, result: parseResult(resultFile, docs[0]) }];
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
    const slices = c.result.slices.filter((s) => s.pair >= from && s.pair < from + per).map((s) => ({ ...s, pair: s.pair - from }));
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

/** A block's label by the product's rules: disturbed pairs dropped, over half disturbed is no verdict. */
function judge(block: LoadgenResult, e: Estimator, interval: Interval): Judged {
  const extracted = extractPairs("block", block, PERCENTILE);
  const pairs = extracted.pairs.filter(e.keep ?? (() => true));
  const disturbed = extracted.dropped.filter(isDisturbed).length + extracted.pairs.length - pairs.length;
  if (disturbed > (extracted.pairs.length + extracted.dropped.length) / 2 || pairs.length < 2) return { label: "not measured", halfWidthPercent: NaN };
  const ci = interval.of(pairs.map(e.d));
  const level = mean(pairs.map((p) => e.level(p.champion)));
  const halfWidthPercent = (100 * (ci.hi - ci.lo)) / 2 / level;
  return { label: ci.lo > 0 ? "red" : ci.hi < 0 ? "green" : "grey", halfWidthPercent };
}

/** Every kept pair's difference of a cell, for the resampled rates. */
function cellDifferences(c: Cell, e: Estimator): number[] {
  return blocks(c).flatMap((b) => extractPairs("block", b, PERCENTILE).pairs.filter(e.keep ?? (() => true)).map(e.d));
}

const pct = (x: number) => `${(100 * x).toFixed(0)}%`;

/** Wilson's 95% interval for k of n. */
function wilson(k: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const z = 1.96;
  const p = k / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

const rate = (k: number, n: number) => (n === 0 ? "–" : `${k}/${n} (${pct(k / n)}, CI ${pct(wilson(k, n)[0])}-${pct(wilson(k, n)[1])})`);

/**
 * The label rate of the design when its n pairs are drawn from all the cell's kept pairs: many
 * synthetic gates from one cell's measurements. It ignores drift between pairs, so it is a
 * second reading beside the measured blocks, not a replacement.
 */
function resampledRate(d: readonly number[], n: number, interval: Interval, wanted: (lo: number, hi: number) => boolean, draws = 1000): number {
  const rand = seededRandom(13);
  let hits = 0;
  for (let k = 0; k < draws; k++) {
    const ci = interval.of(Array.from({ length: n }, () => d[Math.floor(rand() * d.length)]!));
    if (wanted(ci.lo, ci.hi)) hits++;
  }
  return hits / draws;
}

type Interval = { name: string; of: (d: number[]) => { lo: number; hi: number } };
const INTERVALS: Interval[] = [
  { name: "t", of: (d) => pairedT(d, CONFIDENCE).ci },
  { name: "HL", of: (d) => hodgesLehmann(d, CONFIDENCE) },
  { name: "trimmed 10%", of: (d) => trimmedMean(d, CONFIDENCE, 0.1) },
  { name: "trimmed 20%", of: (d) => trimmedMean(d, CONFIDENCE, 0.2) },
];

const cells = loadCells();
const designKey = (c: Cell) => `${c.slice} s x ${Math.round(GATE_MEASURED_SECONDS / (2 * c.slice))}, ${c.order}${c.profile === "uniform" ? "" : `, ${c.profile} workload`}${c.placed ? ", placed" : ""}`;
const designs = [...new Set(cells.filter((c) => !c.name.startsWith("truth")).map(designKey))];

console.log(`# Sensitivity at ${cells[0]?.result.plan.rate ?? "?"} req/s, p${PERCENTILE}, ${GATE_MEASURED_SECONDS} s of slices per gate (${dir})\n`);
console.log("| design | estimator | interval | extra cost | gates | labels (measured) | resampled | half-width, % of p99 (median) | host s/gate |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const design of designs) {
  for (const [e, interval] of ESTIMATORS.flatMap((e) => INTERVALS.map((i) => [e, i] as const))) {
    for (const c of cells.filter((x) => designKey(x) === design).sort((a, b) => a.shift - b.shift)) {
      const bs = blocks(c);
      const judged = bs.map((b) => judge(b, e, interval));
      const measured = judged.filter((j) => j.label !== "not measured");
      const aa = c.shift === 0;
      const hits = measured.filter((j) => (aa ? j.label !== "grey" : j.label === "red")).length;
      const n = Math.round(GATE_MEASURED_SECONDS / (2 * c.slice));
      const resampled = resampledRate(cellDifferences(c, e), n, interval, aa ? (lo, hi) => lo > 0 || hi < 0 : (lo) => lo > 0);
      const hostSeconds = c.wall_seconds - 2 * c.pairs * c.slice + GATE_MEASURED_SECONDS;
      console.log(`| ${design} | ${e.name} | ${interval.name} | ${aa ? "A/A" : `+${c.shift}%`} | ${bs.length} (${bs.length - measured.length} not measured) | ${aa ? "false " : "red "}${rate(hits, measured.length)} | ${pct(resampled)} | ${measured.length > 0 ? median(measured.map((j) => j.halfWidthPercent)).toFixed(1) : "–"} | ${hostSeconds.toFixed(0)} |`);
    }
  }
}

// The order's port bias at p50 (and the SLO percentile): every A/A pair of a cell, and split by
// which arm the pair measured first.
console.log("\n## A/A port bias by order (challenger − champion, µs; t interval over all kept pairs)\n");
console.log("| design | pairs | p50 | p99 | p50, champion first | p50, challenger first |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const c of cells.filter((x) => x.shift === 0)) {
  const pairs = blocks(c).flatMap((b) => extractPairs("block", b, PERCENTILE).pairs);
  const at = (ps: SlicePair[], p: number) => ps.map((x) => slicePercentileUs(x.challenger, p) - slicePercentileUs(x.champion, p));
  const show = (d: number[]) => {
    if (d.length < 2) return "–";
    const t = pairedT(d, CONFIDENCE);
    return `${t.mean.toFixed(1)} [${t.ci.lo.toFixed(1)}, ${t.ci.hi.toFixed(1)}]${t.ci.lo > 0 || t.ci.hi < 0 ? " biased" : ""}`;
  };
  const first = pairs.filter((x) => x.champion.index < x.challenger.index);
  const second = pairs.filter((x) => x.champion.index > x.challenger.index);
  console.log(`| ${designKey(c)} | ${pairs.length} | ${show(at(pairs, 50))} | ${show(at(pairs, PERCENTILE))} | ${show(at(first, 50))} | ${show(at(second, 50))} |`);
}

// The truth: long plain runs, each arm's slices pooled into one histogram.
console.log("\n## True shifts (plain runs: 10 s slices pooled per arm)\n");
console.log("| workload | placed | extra cost | requests per arm | p50 champion → challenger | p99 champion → challenger | p99 shift | service CPU per request |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const c of cells.filter((x) => x.name.startsWith("truth")).sort((a, b) => a.profile.localeCompare(b.profile) || Number(a.placed) - Number(b.placed) || a.shift - b.shift)) {
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
  const cpu = Number.isNaN(a.cpu) ? "not accounted" : `${a.cpu.toFixed(0)} → ${b.cpu.toFixed(0)} µs (${(100 * (b.cpu / a.cpu - 1)).toFixed(1)}%)`;
  console.log(`| ${c.profile} | ${c.placed ? "yes" : "no"} | +${c.shift}% | ${a.h.totalCount} | ${p(a.h, 50)} → ${p(b.h, 50)} µs | ${p(a.h, PERCENTILE)} → ${p(b.h, PERCENTILE)} µs | ${(100 * shift).toFixed(1)}% | ${cpu} |`);
}

// A quieter host, by simulation: the A/A differences of the likeliest default split into the part
// a slice's own finite sample explains (each calm slice's histogram resampled) and the rest, the
// machine's noise; then power at each shift with that rest scaled down.
for (const aaCell of cells.filter((c) => c.name.startsWith("aa-1.5-abba"))) {
  const e = ESTIMATORS[3]!; // log Harrell-Davis: the least noisy per-slice statistic, for the components
  const d = cellDifferences(aaCell, e);
  const total = variance(d);
  const sampling = samplingVariance(aaCell);
  const machine = Math.max(0, total - 2 * sampling);
  // A slice's sampling variance goes as 1/(requests it records): shorter slices record fewer.
  const recordedAt = (seconds: number) => aaCell.result.plan.rate * (seconds - aaCell.result.plan.slice_warmup_ms / 1000);
  const measuredRecorded = recordedAt(aaCell.slice);
  console.log(`\n## A quieter host, by simulation (from ${aaCell.name}, ${e.name})\n`);
  console.log(`sd of the paired difference: ${(100 * Math.sqrt(total)).toFixed(1)}% of p99; of it, each slice's finite sample explains sd ${(100 * Math.sqrt(2 * sampling)).toFixed(1)}% and this machine's noise the rest, sd ${(100 * Math.sqrt(machine)).toFixed(1)}%.\n`);
  console.log("| machine noise left | pairs x slice | power at +2% | at +5% | at +10% |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const left of [1, 0.25, 0.1, 0]) {
    for (const n of [30, 60, 90]) {
      const sd = Math.sqrt((2 * sampling * measuredRecorded) / recordedAt(GATE_MEASURED_SECONDS / (2 * n)) + left * machine);
      // A shift of the nominal size at p99: the plain runs' pooled p99 is itself too noisy here to stand in for it.
      const cellPower = (shift: number) => simulatedPower(ln(1 + shift / 100), sd, n);
      console.log(`| ${pct(left)} | ${n} x ${(GATE_MEASURED_SECONDS / (2 * n)).toFixed(2)} s | ${pct(cellPower(2))} | ${pct(cellPower(5))} | ${pct(cellPower(10))} |`);
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
    if (pairedT(Array.from({ length: n }, () => shift + sd * normalDraw(rand)), CONFIDENCE).ci.lo > 0) red++;
  }
  return red / draws;
}
