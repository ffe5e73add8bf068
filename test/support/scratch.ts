// The directories the tests make under the system's temp dir. Each test file's go when the
// file ends (test/support/scratch-teardown.ts, a setup file of every vitest project), so a run
// of the suite leaves nothing behind; scripts/test-suite.mjs fails one that does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** A new directory `perf-gate-<name>-XXXXXX` under the temp dir, removed when this test file ends. */
export function scratchDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `perf-gate-${name}-`));
  made.push(dir);
  return dir;
}

/** Removes every directory this test file made. */
export function removeScratch(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
