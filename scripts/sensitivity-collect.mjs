// npm run bench:sensitivity (step 1 of 2): measures the designs docs/design/0012-slice-design.md
// compares, on a real local benchmark host (perf-host, the load generator, the example service
// started fresh per run by the host, CPUs held awake), and keeps every run's raw result for step 2
// (scripts/sensitivity.ts), which judges them. Not part of npm test: it runs for about an hour.
//
// Each cell is one long interleaved run of a design (slice length, order) with the challenger at a
// known extra cost per request; step 2 cuts it into back-to-back blocks of 90 s of slices, each
// block one gate's worth of measurement. The "truth" cells are long plain runs (10 s slices,
// pooled per arm) that measure each extra cost's real shift at p99 and in CPU per request,
// independently of the designs judged.
//
//   node scripts/sensitivity-collect.mjs [--out DIR] [--cells a,b,…] [--blocks N]
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    out: { type: "string", default: ".perf-gate/sensitivity" },
    cells: { type: "string" },
    blocks: { type: "string" },
  },
});
const root = process.cwd();
const out = join(root, opt.out);
const RATE = 1000;
const MEASURED_SECONDS = 90; // the mission's figure: slices of one gate, both arms
// The example service's cost per request: its base work, and extra hashing rounds for each shift.
// bench step 2 reports the extra CPU per request the truth runs measured for each.
const BASE_ROUNDS = 2000;
/**
 * The workload profiles. uniform: every request is /work (2,000 rounds, ~0.3 ms), so its p99 is
 * scheduling on this VM, and the extra rounds are sized for the whole request's CPU. mixed: 2% of
 * requests are the slow endpoint /report (20× the rounds, ~5 ms), so the p99 sits inside the
 * reports and is the service's own work; the extra rounds are exactly the shift's share of them.
 */
const PROFILES = {
  uniform: { shiftRounds: { 0: 0, 2: 70, 5: 175, 10: 350 }, requests: '[{path: "/work?key={{rand 1000}}"}]' },
  mixed: {
    shiftRounds: { 0: 0, 2: 40, 5: 100, 10: 200 },
    requests: '[{path: "/work?key={{rand 1000}}", weight: 98}, {path: "/report?key={{rand 1000}}", weight: 2}]',
  },
};

/** The cells in the order they run: the likely default's A/A and power first. */
const CELLS = [
  { name: "aa-1.5-abba", slice: 1.5, order: "abba", shift: 0, blocks: 6 },
  { name: "ab5-1.5-abba", slice: 1.5, order: "abba", shift: 5, blocks: 4 },
  { name: "ab10-1.5-abba", slice: 1.5, order: "abba", shift: 10, blocks: 3 },
  { name: "truth-5", slice: 10, order: "alternate", shift: 5, pairs: 6 },
  { name: "truth-10", slice: 10, order: "alternate", shift: 10, pairs: 6 },
  { name: "aa-4.5-alternate", slice: 4.5, order: "alternate", shift: 0, blocks: 3 },
  { name: "aa-3-abba", slice: 3, order: "abba", shift: 0, blocks: 3 },
  { name: "aa-1.5-alternate", slice: 1.5, order: "alternate", shift: 0, blocks: 3 },
  { name: "ab2-1.5-abba", slice: 1.5, order: "abba", shift: 2, blocks: 4 },
  { name: "truth-2", slice: 10, order: "alternate", shift: 2, pairs: 6 },
  { name: "ab5-3-abba", slice: 3, order: "abba", shift: 5, blocks: 4 },
  { name: "aa-1.5-balanced", slice: 1.5, order: "balanced", shift: 0, blocks: 4 },
  { name: "aa-1.5-abba-mixed", slice: 1.5, order: "abba", shift: 0, blocks: 6, profile: "mixed" },
  { name: "ab5-1.5-abba-mixed", slice: 1.5, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "ab2-1.5-abba-mixed", slice: 1.5, order: "abba", shift: 2, blocks: 4, profile: "mixed" },
  { name: "truth-5-mixed", slice: 10, order: "alternate", shift: 5, pairs: 6, profile: "mixed" },
  { name: "truth-2-mixed", slice: 10, order: "alternate", shift: 2, pairs: 6, profile: "mixed" },
  // The same A/A with the host's placement: the generator on CPU 0, both builds on CPU 1, so
  // the reports' 5 ms of hashing never run on the generator's CPU (unplaced, they delayed its
  // sends past the disturbance limit in most pairs). On one CPU the reports queue the other
  // requests instead, which doubled the half-width here; the shifted cells were not worth running.
  { name: "aa-1.5-abba-mixed-placed", slice: 1.5, order: "abba", shift: 0, blocks: 6, profile: "mixed", placed: true },
  // Shorter slices, twice the pairs: the host's slow spells last seconds, so closer slices share
  // more of them, at the cost of fewer recorded requests per slice (550 past the 0.2 s start).
  { name: "aa-0.75-abba-mixed", slice: 0.75, order: "abba", shift: 0, blocks: 3, profile: "mixed" },
  { name: "ab5-0.75-abba-mixed", slice: 0.75, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "ab2-0.75-abba-mixed", slice: 0.75, order: "abba", shift: 2, blocks: 4, profile: "mixed" },
  { name: "aa-0.5-abba-mixed", slice: 0.5, order: "abba", shift: 0, blocks: 3, profile: "mixed" },
  { name: "ab5-0.5-abba-mixed", slice: 0.5, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "ab2-0.5-abba-mixed", slice: 0.5, order: "abba", shift: 2, blocks: 4, profile: "mixed" },
  // The chosen default's A/A again, later: its false-label rate from more gates.
  { name: "aa-0.5-abba-mixed-again", slice: 0.5, order: "abba", shift: 0, blocks: 3, profile: "mixed" },
  // The gate that extends itself needs consecutive blocks to pool: nine of the default design,
  // three to nine gates' worth, for its false labels and host time with no change and at +2%.
  { name: "aa-0.5-abba-mixed-extending", slice: 0.5, order: "abba", shift: 0, blocks: 9, profile: "mixed" },
  { name: "ab2-0.5-abba-mixed-extending", slice: 0.5, order: "abba", shift: 2, blocks: 9, profile: "mixed" },
];

/**
 * The cells that choose the defaults for the pooled estimator (one p99 per arm over every kept
 * request, docs/design/0008-pooled-percentile.md), `npm run bench:sensitivity`'s default set: the
 * last default design (0.5 s, 200 ms discarded per slice) at no change and +2/+5/+10%, nine blocks
 * of the A/A and +2% for the extending gate; and the designs the pooled estimator opens, since it no
 * longer needs each slice to hold its percentile's sample: less discarded per slice, shorter
 * slices, longer ones. The older cells above stay runnable by name (--cells).
 */
const POOLED_CELLS = [
  { name: "pooled-aa-0.5-d200", slice: 0.5, discard_ms: 200, order: "abba", shift: 0, blocks: 9, profile: "mixed" },
  { name: "pooled-ab5-0.5-d200", slice: 0.5, discard_ms: 200, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "pooled-aa-0.5-d50", slice: 0.5, discard_ms: 50, order: "abba", shift: 0, blocks: 4, profile: "mixed" },
  { name: "pooled-ab5-0.5-d50", slice: 0.5, discard_ms: 50, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "pooled-aa-0.25-d50", slice: 0.25, discard_ms: 50, order: "abba", shift: 0, blocks: 4, profile: "mixed" },
  { name: "pooled-ab5-0.25-d50", slice: 0.25, discard_ms: 50, order: "abba", shift: 5, blocks: 4, profile: "mixed" },
  { name: "pooled-aa-1-d200", slice: 1, discard_ms: 200, order: "abba", shift: 0, blocks: 3, profile: "mixed" },
  { name: "pooled-ab5-1-d200", slice: 1, discard_ms: 200, order: "abba", shift: 5, blocks: 3, profile: "mixed" },
  { name: "pooled-ab2-0.5-d200", slice: 0.5, discard_ms: 200, order: "abba", shift: 2, blocks: 9, profile: "mixed" },
  { name: "pooled-ab10-0.5-d200", slice: 0.5, discard_ms: 200, order: "abba", shift: 10, blocks: 3, profile: "mixed" },
];
const PLACEMENT = ["--loadgen-cpus", "0", "--arm-cpus", "1"];

const ALL = [...CELLS, ...POOLED_CELLS];
const chosen = opt.cells
  ? opt.cells
      .split(",")
      .map(
        (name) =>
          ALL.find((c) => c.name === name) ??
          die(`--cells: no cell ${name} (cells: ${ALL.map((c) => c.name).join(", ")})`),
      )
  : POOLED_CELLS;
function die(message) {
  console.error(`sensitivity-collect: ${message}`);
  process.exit(2);
}
const say = (m) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${m}`);

mkdirSync(out, { recursive: true });
execFileSync("make", ["-s", "-C", "benchmark-host"], { stdio: "inherit" });
const binary = join(out, "service-bin");
execFileSync("go", ["build", "-o", binary, "./examples/service"], {
  cwd: join(root, "benchmark-host"),
  stdio: "inherit",
});

/** A release of the example service whose work per request is BASE_ROUNDS + extra rounds. */
function release(name, extraRounds) {
  const dir = join(out, "releases", name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(join(dir, "bin/service-bin"), readFileSync(binary), { mode: 0o755 });
  // The same binary for every arm; the extra cost is its hashing rounds, set by the release.
  writeFileSync(
    join(dir, "bin/service"),
    `#!/bin/sh\nHASH_ROUNDS=${BASE_ROUNDS + extraRounds} exec ./bin/service-bin\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(dir, "VERSION"), `${name}\n`); // a build of its own: runs are never pooled
  return dir;
}

const champion = release("champion", 0);
const perfHost = join(root, "benchmark-host/bin/perf-host");
const host = join(out, "host");
const ports = ["--champion-port", "18501", "--challenger-port", "18502"];
if (existsSync(host))
  spawnSync(perfHost, ["stop", "--root", host, "--service-user", userInfo().username, ...ports], { stdio: "ignore" });
rmSync(host, { recursive: true, force: true });

for (const cell of chosen) {
  const profile = PROFILES[cell.profile ?? "uniform"];
  const blocks = Number(opt.blocks ?? cell.blocks ?? 1);
  const pairs = cell.pairs ?? blocks * Math.round(MEASURED_SECONDS / (2 * cell.slice));
  const config = join(out, `${cell.name}.yml`);
  writeFileSync(
    config,
    [
      "service: {command: [./bin/service], health_path: /health}",
      "slo: {percentile: 99, budget_ms: 100}",
      // One long run per cell, never extended: step 2 cuts it into gates, and plays the extending
      // gate on consecutive blocks.
      `slices: {seconds: ${cell.slice}, pairs: ${pairs}, order: ${cell.order}, max_extensions: 0${cell.discard_ms === undefined ? "" : `, discard_ms: ${cell.discard_ms}`}}`,
      "warmup_seconds: 5",
      "workloads:",
      `  - {name: work, rates: [${RATE}], connections: 10, requests: ${profile.requests}}`,
      "",
    ].join("\n"),
  );
  const cellOut = join(out, "cells", cell.name);
  rmSync(cellOut, { recursive: true, force: true });
  const extraRounds = profile.shiftRounds[cell.shift];
  const challenger = release(`${cell.name}-${Date.now()}`, extraRounds);
  say(
    `${cell.name}: ${pairs} pairs of ${cell.slice} s, ${cell.order}, challenger +${cell.shift}% (${((2 * pairs * cell.slice) / 60).toFixed(1)} min)`,
  );
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [
      join(root, "dist/cli.js"),
      "run",
      "--local",
      "--root",
      host,
      "--perf-host",
      perfHost,
      ...ports,
      "--config",
      config,
      "--champion",
      champion,
      "--challenger",
      challenger,
      "--out",
      cellOut,
      "--json",
      ...(cell.placed ? PLACEMENT : []),
    ],
    { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" },
  );
  const meta = {
    ...cell,
    profile: cell.profile ?? "uniform",
    placed: cell.placed ?? false,
    discard_ms: cell.discard_ms ?? 200,
    pairs,
    rate: RATE,
    base_rounds: BASE_ROUNDS,
    extra_rounds: extraRounds,
    exit: r.status,
    wall_seconds: (Date.now() - started) / 1000,
  };
  writeFileSync(join(cellOut, "cell.json"), `${JSON.stringify(meta, null, 2)}\n`);
  say(`${cell.name}: exit ${r.status} after ${meta.wall_seconds.toFixed(0)} s`);
}
