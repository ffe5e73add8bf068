// Runs the real load generator binary (built by `make -C benchmark-host`) for tests.
import { type ChildProcess, execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { scratchDir } from "./scratch";

const exec = promisify(execFile);
export const repoRoot = join(import.meta.dirname, "../..");
export const loadgenBin = join(repoRoot, "benchmark-host/bin/loadgen");

/** Builds the Go binaries; cheap when Go's cache is warm. */
export async function buildHostBinaries(): Promise<void> {
  await exec("make", ["-s", "-C", join(repoRoot, "benchmark-host"), "all"], { timeout: 300_000 });
}

/**
 * Runs loadgen on a plan (async, so servers in this process keep answering), holding the CPUs
 * awake as a benchmark host on a VM should: this VM's idle vCPUs halt, and waking them stalled
 * the generator in most runs (benchmark-host/README.md, *Holding the CPUs awake*).
 */
export async function runLoadgen(plan: object, onStart?: (loadgen: ChildProcess) => void): Promise<unknown> {
  const dir = scratchDir("loadgen");
  const file = join(dir, "plan.json");
  writeFileSync(file, JSON.stringify(plan));
  const run = exec(loadgenBin, ["--plan", file, "--hold-cpus-awake"], { maxBuffer: 64 << 20, timeout: 300_000 });
  onStart?.(run.child);
  const { stdout } = await run;
  return JSON.parse(stdout);
}
