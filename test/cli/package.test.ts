// The npm package, as `npx perf-gate` gets it: `npm pack`, installed into an empty directory,
// run from there. The bundle must stand alone: the package has no runtime dependencies.
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { makeResult, pairsFromDiffs } from "../analysis/fixtures";
import { ran } from "../support/cli";
import { repoRoot } from "../support/loadgen";
import { scratchDir } from "../support/scratch";

const exec = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies?: object;
};
let packed: { filename: string; files: { path: string }[] };
let project: string;

beforeAll(async () => {
  const out = scratchDir("pack");
  const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", out], { cwd: repoRoot });
  packed = (JSON.parse(stdout) as (typeof packed)[])[0]!;
  project = scratchDir("npx");
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "uses-perf-gate", private: true }));
  await exec("npm", ["install", "--no-audit", "--no-fund", join(out, packed.filename)], {
    cwd: project,
    timeout: 120_000,
  });
});

const perfGate = (...args: string[]) => ran(join(project, "node_modules/.bin/perf-gate"), args, { cwd: project });

describe("the npm package", () => {
  it("holds the CLI bundle, its licence notices, README, LICENSE and package.json, and nothing else", () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      "LICENSE",
      "README.md",
      "dist/cli.js",
      "dist/licenses.txt",
      "package.json",
    ]);
    expect(pkg.dependencies, "the bundle holds every runtime dependency").toBeUndefined();
  });

  it("perf-gate --version prints the package's version", async () => {
    const r = await perfGate("--version");
    expect(r.stdout).toBe(`perf-gate ${pkg.version}\n`);
  });

  it("perf-gate analyze judges a result file from a clean directory", async () => {
    const file = join(project, "result.json");
    writeFileSync(
      file,
      JSON.stringify(makeResult({ pairs: pairsFromDiffs([2.6, 2.5, 2.7, 2.4, 2.6, 2.55, 2.65, 2.5, 2.6, 2.7]) })),
    );
    const r = await perfGate("analyze", file);
    expect(r, JSON.stringify(r)).toMatchObject({ code: 1 });
    expect(r.stdout).toMatch(
      /^RED \(blocking\): challenger is 2\.\d+ ms slower at p99 \(97\.5% CI \[\+2\.\d+, \+2\.\d+\] ms; .*n=10 pairs\)/m,
    );
  });
});
