// npm run bench:profiling: what sampling both arms' CPU stacks does to a gate, on this machine
// (docs/design/0022-profiling-cost.md). Runs A/A gates of the example service (the same build
// on both arms; a 19:1 mix of /work and /report) through `perf-gate run --local --cgroup`,
// alternating profile: always and profile: never, and prints per gate and per setting side by
// side: the label (an A/A must stay grey), the interval's half-width, the pairs kept, the arms'
// CPU per request (the sampling's interrupts are billed to the task they interrupt), perf's own
// CPU, the profiles' sizes and the functions past their noise (an A/A must show none).
// As root (a cgroup per arm); not part of npm test: about a minute a gate.
//
//   node scripts/profiling-bench.mjs [--gates N] [--cli dist/cli.js] [--perf-host PATH] [--max-foreign-cores X]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    gates: { type: "string", default: "3" },
    cli: { type: "string", default: "dist/cli.js" },
    "perf-host": { type: "string", default: "benchmark-host/bin/perf-host" },
    // On a machine shared with other work, raise it (as perf-gate run's flag) rather than measure nothing.
    "max-foreign-cores": { type: "string", default: "0.25" },
  },
});
if (process.getuid?.() !== 0)
  throw new Error("profiling-bench: run it as root (each arm needs a cgroup of its own to be sampled)");
const mount = readFileSync("/proc/self/mounts", "utf8")
  .split("\n")
  .map((l) => l.split(" "))
  .find((f) => f[2] === "cgroup2")?.[1];
if (!mount) throw new Error("profiling-bench: no cgroup v2 mount");
const root = process.cwd();
const work = join(root, ".perf-gate/profiling");
const cli = resolve(opt.cli);
const perfHost = resolve(opt["perf-host"]);
const gates = Number(opt.gates);

spawnSync("make", ["-s", "-C", "benchmark-host"], { stdio: "inherit" });
rmSync(work, { recursive: true, force: true });
const build = join(work, "build");
mkdirSync(join(build, "bin"), { recursive: true });
spawnSync("go", ["build", "-o", join(build, "bin/service"), "./examples/service"], {
  cwd: join(root, "benchmark-host"),
  stdio: "inherit",
});
const config = (profile) => {
  const path = join(work, `perf-gate-${profile}.yml`);
  writeFileSync(
    path,
    `${readFileSync(join(root, "benchmark-host/examples/service/perf-gate-mixed.yml"), "utf8")}profile: ${profile}\n`,
  );
  return path;
};

async function freePorts(n) {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise((ok) => {
          const s = createServer();
          s.listen(0, "127.0.0.1", () => ok(s));
        }),
    ),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
  return ports;
}

function removeCgroup(path) {
  if (!existsSync(path)) return;
  for (const e of readdirSync(path)) if (statSync(join(path, e)).isDirectory()) removeCgroup(join(path, e));
  rmdirSync(path);
}

/** One A/A gate with profiling on or off, on a host of its own (nothing pooled). */
async function gate(i, profile) {
  const out = join(work, `${profile}-${i}`);
  const host = join(work, `host-${profile}-${i}`);
  const cgroup = join(mount, `perf-gate-profiling-bench-${process.pid}-${profile}-${i}`);
  mkdirSync(cgroup);
  const [championPort, challengerPort] = await freePorts(2);
  // The same host for the run and for stopping what it left (the champion supervisor).
  const hostFlags = [
    "--root",
    host,
    "--champion-port",
    String(championPort),
    "--challenger-port",
    String(challengerPort),
    "--cgroup",
    cgroup,
  ];
  const args = [
    "run",
    "--local",
    "--perf-host",
    perfHost,
    ...hostFlags,
    "--max-foreign-cores",
    opt["max-foreign-cores"],
    "--config",
    config(profile),
    "--champion",
    build,
    "--challenger",
    build,
    "--json",
    "--out",
    out,
  ];
  const r = await new Promise((done) => {
    const p = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", () => {});
    p.on("close", (code) => done({ code, stdout }));
  });
  spawnSync(perfHost, ["stop", ...hostFlags, "--service-user", userInfo().username, "--lock-wait", "60s"]);
  removeCgroup(cgroup);
  const analysis = existsSync(join(out, "analysis.json"))
    ? JSON.parse(readFileSync(join(out, "analysis.json"), "utf8"))
    : null;
  const results = existsSync(join(out, "result.json"))
    ? JSON.parse(readFileSync(join(out, "result.json"), "utf8"))
    : [];
  const c = analysis?.comparisons?.[0];
  const slices = results.flatMap((x) => x.slices ?? []);
  const cpu = (arm) =>
    mean(
      slices
        .filter((s) => s.arm === arm && s.service_cpu_us_per_request !== undefined)
        .map((s) => s.service_cpu_us_per_request),
    );
  const lags = slices.map((s) => s.dispatch_lag_us.p99).sort((a, b) => a - b);
  const prof = results[0]?.profiles;
  const seconds = results[0] ? (Date.parse(results[0].ended) - Date.parse(results[0].started)) / 1000 : NaN;
  const row = {
    profile,
    verdict: analysis?.verdict ?? `exit ${r.code}`,
    halfWidth: c ? (c.ci_ms[1] - c.ci_ms[0]) / 2 : NaN,
    estimate: c?.estimate_ms ?? NaN,
    pairs: c?.pairs ?? 0,
    lagP99: lags[lags.length >> 1] ?? NaN,
    championCpu: cpu("champion"),
    challengerCpu: cpu("challenger"),
    perfCores: prof?.cpu_seconds !== undefined ? prof.cpu_seconds / seconds : NaN,
    bytes: prof?.arms ? Object.values(prof.arms).map((a) => a.bytes) : [],
    moved: c?.functions ? c.functions.grew.length + c.functions.shrank.length : NaN,
    tested: c?.functions?.tested ?? 0,
    noise: c?.functions?.median_noise_us ?? NaN,
  };
  console.log(
    `${profile.padEnd(6)} gate ${i + 1}: ${row.verdict}, ${row.estimate.toFixed(3)} ms ±${row.halfWidth.toFixed(3)}, ${row.pairs} pairs; generator lag p99 median ${row.lagP99} µs; CPU/request champion ${row.championCpu.toFixed(1)} µs, challenger ${row.challengerCpu.toFixed(1)} µs` +
      (profile === "always"
        ? `; perf ${row.perfCores.toFixed(4)} cores, profiles ${row.bytes.map((b) => `${(b / 1024).toFixed(1)} KiB`).join(" + ")}, ${row.moved} of ${row.tested} functions past their noise (median ±${row.noise.toFixed(1)} µs)`
        : ""),
  );
  return row;
}

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const rows = [];
for (let i = 0; i < gates; i++) for (const profile of ["always", "never"]) rows.push(await gate(i, profile));
console.log(
  "\n| A/A gates | labelled red or green | median half-width (ms) | pairs kept | generator lag p99, median slice (µs) | CPU/request champion, challenger (µs) | perf's CPU (cores) | profile sizes | functions past their noise |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|",
);
for (const profile of ["always", "never"]) {
  const r = rows.filter((x) => x.profile === profile);
  const hw = r
    .map((x) => x.halfWidth)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  console.log(
    `| profile: ${profile}, ${r.length} | ${r.filter((x) => x.verdict === "red" || x.verdict === "green").length} | ${hw[hw.length >> 1]?.toFixed(3) ?? "–"} | ${r.map((x) => x.pairs).join(", ")} | ${r.map((x) => x.lagP99).join(", ")} | ${mean(r.map((x) => x.championCpu)).toFixed(1)}, ${mean(r.map((x) => x.challengerCpu)).toFixed(1)} | ${profile === "always" ? mean(r.map((x) => x.perfCores)).toFixed(4) : "–"} | ${
      profile === "always"
        ? `${r
            .flatMap((x) => x.bytes)
            .map((b) => `${(b / 1024).toFixed(1)}`)
            .join(", ")} KiB`
        : "–"
    } | ${profile === "always" ? r.map((x) => x.moved).join(", ") : "–"} |`,
  );
}
