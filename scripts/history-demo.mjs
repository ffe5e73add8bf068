// A month and a half of main on a local host, for the history page's picture: 22 gates, 6
// promotions (advisory reds, greens, a grey), a change point, and a calibration with its drift
// run against the champion of a month before. The builds are the example service with a fixed
// wait per request (DELAY_US), so every step's true size is known; the host's clock moves by
// PERF_GATE_CLOCK_OFFSET between runs (the measurements are real, only the calendar is not).
// Then `perf-gate history` writes the page, and Debian's headless chromium photographs it.
//
//   npm run build && make -C benchmark-host all && node scripts/history-demo.mjs [--out docs/history.png]
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
  },
});
const root = process.cwd();
const work = resolve(values.work);
const host = join(work, "host");
const cli = join(root, "dist/cli.js");
const perfHost = join(root, "benchmark-host/bin/perf-host");
const ports = ["--champion-port", "18011", "--challenger-port", "18012"];
for (const f of [cli, perfHost])
  if (!existsSync(f)) throw new Error(`${f}: not found (npm run build; make -C benchmark-host all)`);

// Each build's wait per request, in µs: its known cost. A step of 50-150 µs is an advisory red
// (the block threshold is 1% of a 20 ms SLO, 0.2 ms).
const DELAYS = {
  a: 2000,
  b: 2100,
  c: 2050,
  d: 2150,
  e: 2250,
  f: 2330,
  g: 2200,
  h: 2200,
  x1: 2400,
  x2: 1950,
  x3: 2180,
  x4: 2100,
};
// [day, champion, challenger]: a pull request's gate; a champion that is not the champion yet is promoted first (its gate is the step).
const PLAN = [
  [0, "a", "b"],
  [1, "a", "x1"],
  [2, "a", "b"],
  [3, "b", "c"],
  [4, "b", "x2"],
  [6, "b", "d"],
  [8, "d", "x3"],
  [9, "d", "e"],
  [11, "e", "x4"],
  [12, "e", "f"],
  [14, "f", "x1"],
  [15, "f", "g"],
  [17, "g", "x3"],
  [19, "g", "x4"],
  [21, "g", "h"],
  [24, "h", "x2"],
  [27, "h", "x1"],
  [30, "h", "x4"],
  [33, "h", "x3"],
  [36, "h", "x2"],
  [39, "h", "x4"],
  [41, "h", "x1"],
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
  writeFileSync(join(dir, "bin/service"), `#!/bin/sh\nexec env DELAY_US=${delay} ./bin/service-bin\n`, { mode: 0o755 });
  writeFileSync(join(dir, "VERSION"), `${name}\n`);
  builds[name] = dir;
}
const config = join(work, "perf-gate.yml");
writeFileSync(
  config,
  `service:\n  command: ["./bin/service"]\n  health_timeout_seconds: 10\nslo: {percentile: 90, budget_ms: 20}\nblock_threshold_percent: 1\nbudget: {percent_per_30_days: 10}\nslices: {seconds: 1, pairs: 8, max_extensions: 0}\nwarmup_seconds: 2\nworkloads:\n  - name: work\n    rates: [300]\n    connections: 8\n    requests: [{path: "/work?key={{rand 1000}}"}]\n`,
);

const stop = () =>
  spawnSync(perfHost, ["stop", "--root", host, "--service-user", process.env.USER ?? "root", ...ports], {
    stdio: "ignore",
  });
stop();
rmSync(host, { recursive: true, force: true });
const run = (day, ...args) => {
  const r = spawnSync(
    process.execPath,
    [
      cli,
      "run",
      "--local",
      "--root",
      host,
      "--perf-host",
      perfHost,
      ...ports,
      "--config",
      config,
      "--keep-host",
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
    const s = r.summary;
    const truth = (DELAYS[challenger] - DELAYS[champion]) / 1000;
    console.log(
      `day ${String(day).padStart(2)}: ${challenger} vs ${champion} (true ${truth >= 0 ? "+" : ""}${truth.toFixed(3)} ms): ${s ? `${s.verdict}${s.blocking ? `, blocking (${s.blocked_by.join(", ")})` : ""} ${s.estimate_ms.toFixed(3)} ms [${s.ci_ms.map((x) => x.toFixed(3)).join(", ")}]${s.comparisons[0].budget ? `; budget: main ${s.comparisons[0].budget.main_percent.toFixed(2)}%, this ${s.comparisons[0].budget.change_percent.toFixed(2)}%` : ""}` : `exit ${r.code}: ${r.stderr.trim().split("\n").at(-1)}`}`,
    );
  }
  const aa = run(43, "--champion", builds.h, "--aa");
  const drift = aa.summary?.drift;
  for (const d of drift?.runs ?? []) {
    const ancestor = names.get(d.ancestor_sha);
    const truth = (DELAYS.h - DELAYS[ancestor]) / 1000;
    console.log(
      `drift of h against ${ancestor}: ${d.estimate_ms.toFixed(3)} ms [${d.ci_ms.map((x) => x.toFixed(3)).join(", ")}] (known shift ${truth >= 0 ? "+" : ""}${truth.toFixed(3)} ms: ${d.ci_ms[0] <= truth && truth <= d.ci_ms[1] ? "inside" : "OUTSIDE"} the interval); ${d.percent.toFixed(2)}% measured, the ${d.steps} steps between sum to ${d.steps_percent.toFixed(2)}%`,
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
    [
      cli,
      "history",
      "--local",
      "--root",
      host,
      "--perf-host",
      perfHost,
      ...ports,
      "--out",
      page,
      "--json",
      join(work, "history.json"),
      "--repository",
      "example/service",
    ],
    {
      stdio: "inherit",
      env: { ...process.env, PERF_GATE_CLOCK_OFFSET: `${43 * 24}h` },
    },
  );
  console.log(`page: ${page}, ${statSync(page).size} bytes`);
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  const tab = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  await tab.goto(`file://${page}`);
  await tab.waitForFunction(() => document.body.dataset.charts !== undefined);
  await tab.screenshot({ path: values.out, fullPage: true });
  await browser.close();
  console.log(`screenshot: ${values.out}`);
} finally {
  stop();
}
