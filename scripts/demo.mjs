// npm run demo: a complete local gate on this machine. It builds perf-host and the example
// service (its normal build as champion, its -tags slow build as a challenger that does real
// extra work per request), starts a local benchmark host, runs the gate (red), then an A/A run
// (grey) that records the host's noise floor. Needs Node 22+ and Go 1.26; no network but the
// Go module proxy, no root.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";

const root = process.cwd();
const work = join(root, ".perf-gate/demo");
const host = join(work, "host");
const started = Date.now();
const step = (msg) => console.log(`\n== ${msg} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { stdio: "inherit", ...opts });

step("building perf-host, the load generator and the example service");
sh("make", ["-s", "-C", "benchmark-host"]);
for (const [name, tags] of [
  ["champion", []],
  ["challenger", ["-tags", "slow"]],
]) {
  const dir = join(work, "releases", name);
  mkdirSync(join(dir, "bin"), { recursive: true });
  sh("go", ["build", ...tags, "-o", join(dir, "bin/service"), "./examples/service"], {
    cwd: join(root, "benchmark-host"),
  });
  writeFileSync(join(dir, "VERSION"), `${name}\n`);
}

// A previous demo's champion may still be serving (an interrupted demo): stop it, and start
// from a clean host. Each run below stops the champion it started when it ends.
const perfHost = join(root, "benchmark-host/bin/perf-host");
const ports = ["--champion-port", "18001", "--challenger-port", "18002"];
if (existsSync(host))
  spawnSync(perfHost, ["stop", "--root", host, "--service-user", userInfo().username, ...ports], { stdio: "ignore" });
rmSync(host, { recursive: true, force: true });

const gate = (extra) =>
  spawnSync(
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
      "benchmark-host/examples/service/perf-gate.yml",
      "--champion",
      join(work, "releases/champion"),
      ...extra,
    ],
    { stdio: "inherit" },
  ).status;

step("gate: champion (the example service) vs a challenger that hashes 6,000 more times per request");
const ab = gate(["--challenger", join(work, "releases/challenger"), "--out", join(work, "report-ab")]);
step("A/A: the champion's build on both ports, to measure the host's noise floor");
const aa = gate(["--aa", "--out", join(work, "report-aa")]);

step(`done: gate exit ${ab} (1 = blocking regression), A/A exit ${aa}`);
console.log(
  `reports: ${join(".perf-gate/demo", "report-ab", "report.md")} and ${join(".perf-gate/demo", "report-aa", "report.md")}`,
);
process.exit(ab === 1 && aa === 0 ? 0 : 1);
