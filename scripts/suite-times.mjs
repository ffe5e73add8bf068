// Where the suite's time goes: runs a Go test package (`go test -json`) or vitest (its JSON
// reporter) inside a cgroup v1 cpuacct group of its own, samples the group's CPU time as it
// runs, and prints per Go test or per vitest file its wall seconds and the CPU seconds used
// meanwhile by it and everything it started (sshd, perf-host, the arms, the load generator,
// also when they detach: cgroup membership is inherited, and perf-host moves its arms only in
// the cgroup v2 hierarchy). Wall time alone misleads on a machine shared with other work; CPU
// seconds are this suite's own. CPU is attributed by time window: exact where tests run one at
// a time, the sum of all that ran meanwhile where they overlap (parallel Go tests, vitest's
// parallel files); the total is exact. A third column, run s, is the seconds in which a run was
// in flight (perf-host's executor, which starts the arms, warms up and measures, or the load
// generator run by itself): the part of a test that only fewer or shorter runs cut, so the
// suite's floor on any machine where they run one at a time. Needs root (the cgroup).
//
// With --json, the rows go to OUT and the command's own output (go test's events, vitest's
// report) beside it, as OUT.raw. --subtests lists Go subtests as rows of their own too.
//
//   node scripts/suite-times.mjs go [--dir benchmark-host] [--json out.json] [--subtests] -- ./e2e -run X -count=1
//   node scripts/suite-times.mjs vitest [--json out.json] -- --project e2e test/action/gate.e2e.test.ts
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dir: { type: "string", default: "." },
    json: { type: "string" },
    subtests: { type: "boolean", default: false },
  },
});
const [tool, ...args] = positionals;
if (tool !== "go" && tool !== "vitest") {
  console.error("usage: node scripts/suite-times.mjs go|vitest [--dir DIR] [--json OUT] -- ARGS");
  process.exit(2);
}

const group = `/sys/fs/cgroup/cpuacct/perf-gate-suite-times-${process.pid}`;
mkdirSync(group);
writeFileSync(join(group, "cgroup.procs"), String(process.pid));
/** The processes in the group: this one, and what the command started. */
const groupPids = () => readFileSync(join(group, "cgroup.procs"), "utf8").split("\n").filter(Boolean);
/** Where vitest writes its report; removed on the way out. */
const work = mkdtempSync(join(tmpdir(), "perf-gate-suite-times-"));
const report = join(work, "vitest.json");
// On the way out, also when interrupted (below) or failing: the report goes; what is in the
// group (this process, and what the command left running, a detached process) moves to the
// root group, and the group goes, so no run leaves one behind. A process still exiting (an
// interrupted command's) cannot be moved and keeps the group: up to 5 s for it to go.
process.on("exit", () => {
  rmSync(work, { recursive: true, force: true });
  for (let tries = 1; ; tries++) {
    for (const pid of groupPids()) {
      try {
        writeFileSync(join("/sys/fs/cgroup/cpuacct", "cgroup.procs"), pid);
      } catch {
        // it ended meanwhile
      }
    }
    try {
      return rmdirSync(group);
    } catch (e) {
      if (e.code !== "EBUSY" || tries === 50) return console.error(`suite-times: ${group} is left: ${e.message}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
});
const usage = () => Number(readFileSync(join(group, "cpuacct.usage"), "utf8")) / 1e9;

/** A run in flight: perf-host's executor, or the load generator's binary. */
const RUN = /(^|\/)(perf-host\0execute|loadgen)\0/;
const runInFlight = () =>
  groupPids().some((pid) => {
    try {
      return RUN.test(readFileSync(`/proc/${pid}/cmdline`, "latin1"));
    } catch {
      return false; // it ended meanwhile
    }
  });

/** [ms since the epoch, CPU seconds, a run in flight] every 200 ms while the command runs. */
const sample = () => [Date.now(), usage(), runInFlight()];
const samples = [sample()];
const sampler = setInterval(() => samples.push(sample()), 200);
const cpuAt = (t) => {
  let i = samples.findIndex(([at]) => at >= t);
  if (i < 0) i = samples.length - 1;
  return samples[i][1];
};
/** Seconds between t0 and t1 (ms) in which a run was in flight, from the samples between them. */
const runS = (t0, t1) => {
  const within = samples.filter(([at]) => at >= t0 && at <= t1);
  return within.length === 0 ? 0 : ((t1 - t0) / 1000) * (within.filter((s) => s[2]).length / within.length);
};

const [cmd, argv] =
  tool === "go"
    ? ["go", ["test", "-json", ...args]]
    : ["npx", ["vitest", "run", "--reporter=json", `--outputFile=${report}`, "--reporter=default", ...args]];
const started = Date.now();
// In a process group of its own, which a signal to this process is passed on to whole (npx
// does not pass it on to vitest).
const child = spawn(cmd, argv, { cwd: opt.dir, stdio: ["ignore", "pipe", "inherit"], detached: true });
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
])
  process.on(signal, () => {
    process.kill(-child.pid, signal);
    process.exit(code);
  });
let stdout = "";
child.stdout.on("data", (d) => {
  stdout += d;
  if (tool === "vitest") process.stdout.write(d);
});
const code = await new Promise((resolve) => child.on("close", resolve));
clearInterval(sampler);
samples.push(sample());
const total = {
  wallS: (Date.now() - started) / 1000,
  cpuS: samples.at(-1)[1] - samples[0][1],
  runS: runS(started, Date.now()),
};

/** Rows: name, wall seconds, CPU seconds and seconds of a run in flight in its window, outcome. */
const raw = tool === "go" ? stdout : readFileSync(report, "utf8");
const rows = tool === "go" ? goRows(raw) : vitestRows(JSON.parse(raw));
rows.sort((a, b) => b.wallS - a.wallS);
const width = Math.max(...rows.map((r) => r.name.length), 5);
const cells = (r) => [r.wallS, r.cpuS, r.runS].map((x) => x.toFixed(1).padStart(7)).join(" ");
console.log(`\n${"test".padEnd(width)}  wall s   CPU s   run s  outcome`);
for (const r of rows) console.log(`${r.name.padEnd(width)} ${cells(r)}  ${r.outcome}`);
console.log(`${"all".padEnd(width)} ${cells(total)}  exit ${code}`);
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({ tool, args, total, rows }, null, 2));
  writeFileSync(`${opt.json}.raw`, raw);
}
process.exit(code ?? 1);

/**
 * Go tests (top-level, or subtests too) and packages, from `go test -json` events (each one's
 * first and last event); a failure's last lines are printed.
 */
function goRows(text) {
  const tests = new Map();
  const output = new Map();
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    const e = JSON.parse(line);
    const pkg = e.Package.replace(/^.*?benchmark-host\//, "");
    const id = e.Test ? `${pkg} ${e.Test}` : `${pkg} (package)`;
    if (e.Action === "output") output.set(id, [...(output.get(id) ?? []), e.Output]);
    if (e.Action === "fail") console.log(`--- ${id} failed:\n${(output.get(id) ?? []).slice(-15).join("")}`);
    if (e.Test?.includes("/") && !opt.subtests) continue;
    const t = tests.get(id) ?? { start: Date.parse(e.Time), end: 0, outcome: "?", said: "" };
    t.end = Date.parse(e.Time);
    if (["pass", "fail", "skip"].includes(e.Action)) t.outcome = e.Action;
    if (e.Action === "output" && /_test\.go:\d+: /.test(e.Output)) t.said = e.Output.trim();
    tests.set(id, t);
  }
  return [...tests].map(([name, t]) => ({
    name,
    wallS: (t.end - t.start) / 1000,
    cpuS: cpuAt(t.end) - cpuAt(t.start),
    runS: runS(t.start, t.end),
    outcome: t.outcome === "skip" ? `skip: ${t.said.slice(0, 100)}` : t.outcome,
  }));
}

/** vitest files, from its JSON reporter. */
function vitestRows(r) {
  return r.testResults.map((f) => {
    const name = f.name.replace(`${process.cwd()}/`, "");
    const skipped = f.assertionResults.filter((a) => a.status !== "passed" && a.status !== "failed").length;
    return {
      name,
      wallS: (f.endTime - f.startTime) / 1000,
      cpuS: cpuAt(f.endTime) - cpuAt(f.startTime),
      runS: runS(f.startTime, f.endTime),
      outcome: `${f.status}${skipped ? ` (${skipped} skipped)` : ""}`,
    };
  });
}
