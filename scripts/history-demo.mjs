// A month and a half of main on a local host, for the history page's picture: 22 gates, 6
// promotions (advisory reds, greens, a grey), a change point, and a calibration with its drift
// run against the champion of a month before. The builds are the example service with a fixed
// busy wait per request (SPIN_US), so every step's true size is known; the host's clock moves by
// PERF_GATE_CLOCK_OFFSET between runs (the measurements are real, only the calendar is not).
// Then `perf-gate history` writes the page, and Debian's headless chromium photographs it.
//
//   npm run build && make -C benchmark-host all && node scripts/history-demo.mjs [--out docs/history.png] [--max-foreign-cores X]
//
// About 12 minutes on 2 cores. Prints each verdict, the drift run against the known shift and
// the page's size.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const { values } = parseArgs({
  options: {
    out: { type: "string", default: "docs/history.png" },
    work: { type: "string", default: ".perf-gate/history-demo" },
    "max-foreign-cores": { type: "string", default: "0.25" },
  },
});
const root = process.cwd();
const foreignCores = values["max-foreign-cores"];
const work = resolve(values.work);
const host = join(work, "host");
const cli = join(root, "dist/cli.js");
const perfHost = join(root, "benchmark-host/bin/perf-host");
const ports = ["--champion-port", "18011", "--challenger-port", "18012"];
for (const f of [cli, perfHost])
  if (!existsSync(f)) throw new Error(`${f}: not found (npm run build; make -C benchmark-host all)`);

// Each build's busy wait per request, in µs: its known cost. A step of 0.2 ms is an advisory red
// (the block threshold is 1% of a 40 ms SLO, 0.4 ms); three in a row are a change point.
const DELAYS = { a: 500, b: 700, c: 900, d: 1100, e: 900, f: 900, g: 1100, x1: 1700, x2: 600, x3: 1100, x4: 1200 };
// [day, champion, challenger]: a pull request's gate; a champion that is not the champion yet is
// promoted first (its last gate is the step). Merged: b, c, d (three advisory reds in a row: a
// change point), e (a green), f (a grey), g (a red). x1..x4 are pull requests never merged.
const PLAN = [
  [0, "a", "b"],
  [1, "a", "x1"],
  [2, "b", "c"],
  [3, "b", "x2"],
  [5, "c", "d"],
  [7, "c", "x3"],
  [8, "d", "e"],
  [10, "d", "x2"],
  [11, "e", "f"],
  [13, "e", "x4"],
  [14, "f", "g"],
  [16, "f", "x1"],
  [17, "g", "x3"],
  [19, "g", "x2"],
  [21, "g", "x4"],
  [24, "g", "x1"],
  [27, "g", "x3"],
  [30, "g", "x2"],
  [33, "g", "x4"],
  [36, "g", "x3"],
  [39, "g", "x1"],
  [41, "g", "x2"],
];

mkdirSync(work, { recursive: true });
const bin = join(work, "service-bin");
execFileSync("go", ["build", "-o", bin, "./examples/service"], { cwd: join(root, "benchmark-host"), stdio: "inherit" });
const builds = {};
for (const [name, delay] of Object.entries(DELAYS)) {
  const dir = join(work, "builds", name);
  mkdirSync(join(dir, "bin"), { recursive: true });
  copyFileSync(bin, join(dir, "bin/service-bin"));
  chmodSync(join(dir, "bin/service-bin"), 0o755);
  writeFileSync(join(dir, "bin/service"), `#!/bin/sh\nexec env SPIN_US=${delay} ./bin/service-bin\n`, { mode: 0o755 });
  writeFileSync(join(dir, "VERSION"), `${name}\n`);
  builds[name] = dir;
}
const config = join(work, "perf-gate.yml");
writeFileSync(
  config,
  `service:\n  command: ["./bin/service"]\n  health_timeout_seconds: 10\nslo: {percentile: 50, budget_ms: 40}\nblock_threshold_percent: 1\nbudget: {percent_per_30_days: 80}\nslices: {seconds: 0.5, pairs: 20, max_extensions: 0}\nwarmup_seconds: 2\nworkloads:\n  - name: work\n    rates: [300]\n    connections: 8\n    requests: [{path: "/work?key={{rand 1000}}"}]\n`,
);

const stop = () =>
  spawnSync(perfHost, ["stop", "--root", host, "--service-user", process.env.USER ?? "root", ...ports], {
    stdio: "ignore",
  });
stop();
rmSync(host, { recursive: true, force: true });
/** perf-gate COMMAND on the local host, before its own arguments. */
const perfGate = (command) => [cli, command, "--local", "--root", host, "--perf-host", perfHost, ...ports];
const run = (day, ...args) => {
  const r = spawnSync(
    process.execPath,
    [
      ...perfGate("run"),
      "--config",
      config,
      "--keep-host",
      // --max-foreign-cores: on a machine shared with other work (this project's VM) the default
      // 0.25 cores drops most pairs as disturbed; a dedicated host keeps the default.
      "--max-foreign-cores",
      foreignCores,
      "--json",
      "--out",
      join(work, "out", String(day)),
      ...args,
    ],
    {
      encoding: "utf8",
      env: { ...process.env, PERF_GATE_CLOCK_OFFSET: `${day * 24}h` },
      maxBuffer: 64 << 20,
    },
  );
  try {
    return { code: r.status, summary: JSON.parse(r.stdout), stderr: r.stderr };
  } catch {
    return { code: r.status, summary: null, stderr: r.stderr };
  }
};

// Each build's SHA as the host names it (a digest of its files), read from the runs' results.
const names = new Map();
try {
  for (const [day, champion, challenger] of PLAN) {
    const r = run(day, "--champion", builds[champion], "--challenger", builds[challenger]);
    const resultFile = join(work, "out", String(day), "result.json");
    if (existsSync(resultFile)) {
      const { builds: b } = JSON.parse(readFileSync(resultFile, "utf8"))[0].plan;
      names.set(b.challenger_sha, challenger).set(b.champion_sha, champion);
    }
    const truth = (DELAYS[challenger] - DELAYS[champion]) / 1000;
    console.log(
      `day ${String(day).padStart(2)}: ${challenger} vs ${champion} (true ${signed(truth)} ms): ${verdictOf(r)}`,
    );
  }
  const aa = run(43, "--champion", builds.g, "--aa");
  const drift = aa.summary?.drift;
  for (const d of drift?.runs ?? []) {
    const ancestor = names.get(d.ancestor_sha);
    const truth = (DELAYS.g - DELAYS[ancestor]) / 1000;
    console.log(
      `drift of g against ${ancestor}: ${d.estimate_ms.toFixed(3)} ms [${d.ci_ms.map((x) => x.toFixed(3)).join(", ")}] (known shift ${truth >= 0 ? "+" : ""}${truth.toFixed(3)} ms: ${d.ci_ms[0] <= truth && truth <= d.ci_ms[1] ? "inside" : "OUTSIDE"} the interval); ${d.percent.toFixed(2)}% measured, the ${d.steps} steps between sum to ${d.steps_percent.toFixed(2)}%`,
    );
  }
  if (!drift?.runs?.length) console.log(`no drift run: ${drift?.skipped ?? aa.stderr.trim()}`);
  for (const c of drift?.change_points ?? [])
    console.log(
      `change point: ${c.key} ${c.sum_ms.toFixed(3)} ms over ${c.shas.length} reds in a row (threshold ${c.threshold_ms} ms)`,
    );

  const page = join(work, "history.html");
  execFileSync(
    process.execPath,
    [...perfGate("history"), "--out", page, "--json", join(work, "history.json"), "--repository", "example/service"],
    {
      stdio: "inherit",
      env: { ...process.env, PERF_GATE_CLOCK_OFFSET: `${43 * 24}h` },
    },
  );
  console.log(`page: ${page}, ${statSync(page).size} bytes`);
  const browser = await chromium.launch(JSON.parse(readFileSync(join(root, "test/support/chromium.json"), "utf8")));
  const tab = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  await tab.goto(`file://${page}`);
  await tab.waitForFunction(() => document.body.dataset.charts !== undefined);
  await tab.screenshot({ path: values.out, fullPage: true });
  await browser.close();
  console.log(`screenshot: ${values.out}`);
} finally {
  stop();
}

function signed(x) {
  return `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;
}

/** A run's verdict in one line; a run that could not measure says why. */
function verdictOf({ code, summary: s, stderr }) {
  if (!s || s.estimate_ms === undefined) return `exit ${code}: ${stderr.trim().split("\n").at(-1)}`;
  const budget = s.comparisons[0].budget;
  const blocked = s.blocking ? `, blocking (${s.blocked_by.join(", ")})` : "";
  return `${s.verdict}${blocked} ${signed(s.estimate_ms)} ms [${s.ci_ms.map(signed).join(", ")}]${budget ? `; budget: main ${budget.main_percent.toFixed(1)}%, this ${budget.change_percent.toFixed(1)}% of ${budget.limit_percent}%` : ""}`;
}
