// npm test's tests, in two phases (docs/design/0031-tests-that-measure-run-alone.md). First
// everything that does not measure, at once: the Go packages' tests of behaviour
// (make test-behaviour) beside vitest's unit and end-to-end files of behaviour; the simulations
// keep the CPUs busy while the end-to-end tests mostly wait on slices and health checks. Then
// what must run alone, one at a time: the Go tests that measure or load the whole machine
// (make test-alone), then vitest's measuring files (project e2e-alone). The second phase runs
// whether the first failed or not; the exit code is the worst. The failures' own lines (Go's
// "--- FAIL" and the lines it logged, vitest's "FAIL" and assertion lines) are printed again at
// the end, where a log's tail shows them. A run leaves nothing behind: what a test made under the
// temp dir or /var/lib and did not remove fails the run (a failed Go test keeps its host there
// for a look, and the suite has failed already).
//
//   node scripts/test-suite.mjs [--phase behaviour|alone]
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({ options: { phase: { type: "string" } } });

/** A failed Go test's first line: it names the test, and the lines it logged follow. */
const GO_FAIL = /^\s*--- FAIL/;
/** Another line that names or explains a failure, in go test's or vitest's output (colours removed). */
const FAILURE = /^(FAIL\b|panic:|\s*(FAIL|×)\s|\s*(AssertionError|Error):)/;
/** A line of a failed Go test's log (indented under its "--- FAIL"), until the package's verdict. */
const GO_LOG = /^\s+\S/;
const failures = { named: [], logged: [] };

/** Runs a command, each line of its output prefixed with its name; resolves to its exit code. */
function run(name, cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    for (const stream of [child.stdout, child.stderr]) {
      let rest = "";
      let inFailedTest = false;
      stream.on("data", (d) => {
        const lines = (rest + d).split("\n");
        rest = lines.pop();
        for (const line of lines) {
          process.stdout.write(`[${name}] ${line}\n`);
          // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's colour codes
          const plain = line.replace(/\x1b\[[0-9;]*m/g, "");
          const goFail = GO_FAIL.test(plain);
          if (goFail) inFailedTest = true;
          else if (/^(ok|FAIL|PASS)\b/.test(plain)) inFailedTest = false;
          if (goFail || FAILURE.test(plain)) failures.named.push(`[${name}] ${line}`);
          else if (inFailedTest && GO_LOG.test(plain)) failures.logged.push(`[${name}] ${line}`);
        }
      });
      stream.on("end", () => rest && process.stdout.write(`[${name}] ${rest}\n`));
    }
    child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** What the tests make outside the repository and remove: scratch directories, installed test hosts. */
function madeByTests() {
  const named = (dir, prefix) => {
    try {
      return readdirSync(dir)
        .filter((n) => n.startsWith(prefix))
        .map((n) => join(dir, n));
    } catch {
      return [];
    }
  };
  return [...named(tmpdir(), "perf-gate-"), ...named("/var/lib", "perf-gate-install-")];
}

const started = Date.now();
const before = new Set(madeByTests());
const phases = {
  behaviour: () =>
    Promise.all([
      run("go", "make", ["-s", "-C", "benchmark-host", "test-behaviour"]),
      run("vitest", "npx", ["vitest", "run", "--project", "unit", "--project", "e2e"]),
    ]),
  alone: async () => [
    await run("go", "make", ["-s", "-C", "benchmark-host", "test-alone"]),
    await run("vitest", "npx", ["vitest", "run", "--project", "e2e-alone"]),
  ],
};
const codes = [];
for (const [phase, go] of Object.entries(phases)) {
  if (opt.phase && opt.phase !== phase) continue;
  const t0 = Date.now();
  codes.push(...(await go()));
  console.log(
    `test-suite: ${phase} done in ${((Date.now() - t0) / 1000).toFixed(0)} s (exit codes ${codes.join(", ")})`,
  );
}
const left = madeByTests().filter((p) => !before.has(p));
if (left.length > 0) {
  failures.named.push(
    `[suite] left behind by the tests (${left.length}; test/support/scratch.ts removes a file's own): ${left.slice(0, 8).join(" ")}`,
  );
  codes.push(1);
}
// Kept short: a CI log is often read from its last hundred lines.
if (failures.named.length > 0) {
  console.log(`test-suite: what failed:\n${failures.named.slice(0, 25).join("\n")}`);
  if (failures.logged.length > 0)
    console.log(`test-suite: what the failed Go tests logged:\n${failures.logged.slice(0, 35).join("\n")}`);
}
console.log(`test-suite: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
process.exit(Math.max(0, ...codes));
