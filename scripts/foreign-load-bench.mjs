// npm run bench:foreign-load: what foreign load does to A/A gates on this machine, and what the
// host's rule does about it. Runs N A/A gates of the example service through `perf-gate run
// --local` with a neighbour (a busy loop on one core) off, then on, and prints per setting the
// gates labelled red or green (false labels), the gates that could not measure, and the share of
// pairs dropped as disturbed by foreign load or by the load generator falling behind, side by
// side. --cli and --perf-host point it at another build (a checkout of an earlier commit) to
// compare designs on the same machine. Not part of npm test: about 30 s a gate.
//
//   node scripts/foreign-load-bench.mjs [--gates N] [--cli dist/cli.js] [--perf-host PATH] [--label NAME]
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    gates: { type: "string", default: "6" },
    cli: { type: "string", default: "dist/cli.js" },
    "perf-host": { type: "string", default: "benchmark-host/bin/perf-host" },
    label: { type: "string", default: "this checkout" },
  },
});
const root = process.cwd();
const work = join(root, ".perf-gate/foreign-load");
const cli = resolve(opt.cli);
const perfHost = resolve(opt["perf-host"]);
const gates = Number(opt.gates);

spawnSync("make", ["-s", "-C", "benchmark-host"], { stdio: "inherit" });
rmSync(work, { recursive: true, force: true });
const champion = join(work, "champion");
mkdirSync(join(champion, "bin"), { recursive: true });
spawnSync("go", ["build", "-o", join(champion, "bin/service"), "./examples/service"], {
  cwd: join(root, "benchmark-host"),
  stdio: "inherit",
});
const config = join(work, "perf-gate.yml");
writeFileSync(
  config,
  `service:
  command: ["./bin/service"]
slo: {percentile: 90, budget_ms: 50}
slices: {seconds: 0.5, pairs: 16}
warmup_seconds: 1
workloads:
  - name: work
    rates: [300]
    requests: [{path: "/work?key={{rand 1000}}"}]
`,
);

/** One A/A gate; with a neighbour, a busy loop on one core for the whole of it. */
async function gate(i, neighbour) {
  const out = join(work, `${neighbour ? "on" : "off"}-${i}`);
  const busy = neighbour ? spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" }) : null;
  const host = join(work, `host-${neighbour ? "on" : "off"}-${i}`);
  const r = await new Promise((done) => {
    const p = spawn(
      process.execPath,
      [
        cli,
        "run",
        "--local",
        "--root",
        host,
        "--perf-host",
        perfHost,
        "--champion-port",
        "18101",
        "--challenger-port",
        "18102",
        "--config",
        config,
        "--champion",
        champion,
        "--aa",
        "--json",
        "--out",
        out,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => done({ code, stdout, stderr }));
  });
  busy?.kill();
  let summary = null;
  try {
    summary = JSON.parse(r.stdout);
  } catch {}
  const results = JSON.parse(readFileSync(join(out, "result.json"), "utf8"));
  const slices = results.flatMap((x) => x.slices ?? []);
  const pairs = new Set(slices.map((s) => s.pair)).size;
  const foreign = new Set(slices.filter((s) => s.host_disturbance).map((s) => s.pair)).size;
  const verdict = summary?.verdict ?? (r.code === 2 ? "could not measure" : `exit ${r.code}`);
  const dropped = summary?.comparisons?.[0]?.dropped_pairs?.length ?? summary?.runs?.[0]?.dropped_pairs?.length ?? 0;
  const meanForeign = slices.length ? slices.reduce((a, s) => a + (s.foreign_cpu_cores ?? 0), 0) / slices.length : NaN;
  console.log(
    `${opt.label} neighbour ${neighbour ? "on " : "off"} gate ${i + 1}: ${verdict}; ${dropped} of ${pairs} pairs dropped, ${foreign} with foreign load; mean foreign ${meanForeign.toFixed(3)} cores; preflight ${/quiet: \w+/.exec(r.stderr + r.stdout)?.[0] ?? "-"}`,
  );
  return { verdict, pairs, dropped, foreign, labelled: verdict === "red" || verdict === "green" };
}

const table = [];
for (const neighbour of [false, true]) {
  const rows = [];
  for (let i = 0; i < gates; i++) rows.push(await gate(i, neighbour));
  const sum = (f) => rows.reduce((a, r) => a + f(r), 0);
  table.push({
    neighbour,
    labelled: sum((r) => (r.labelled ? 1 : 0)),
    unmeasured: sum((r) => (/could.not.measure/.test(r.verdict) ? 1 : 0)),
    pairs: sum((r) => r.pairs),
    dropped: sum((r) => r.dropped),
    foreign: sum((r) => r.foreign),
  });
}
console.log(
  `\n| ${opt.label} | A/A gates | labelled red or green | could not measure | pairs dropped | of them foreign load |\n|---|---:|---:|---:|---:|---:|`,
);
for (const t of table)
  console.log(
    `| neighbour ${t.neighbour ? "on" : "off"} | ${gates} | ${t.labelled} | ${t.unmeasured} | ${t.dropped} of ${t.pairs} (${((100 * t.dropped) / Math.max(1, t.pairs)).toFixed(0)}%) | ${t.foreign} |`,
  );
