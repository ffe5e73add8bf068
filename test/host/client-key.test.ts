// The SSH key the host client writes leaves the disk with the process, also when the process
// exits from a signal handler without closing its clients, as a step the runner cancels does
// (src/action/github/open-checks.ts): a real process, the client as bundled.
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/loadgen";
import { scratchDir } from "../support/scratch";

/** A program that opens a client with a key and then ends as `ending` says. */
const program = (ending: string) => `
import { HostClient } from ${JSON.stringify(join(repoRoot, "src/host/client.ts"))};
new HostClient({ host: "bench.example.com", port: 22, user: "ci", privateKey: "a key", knownHosts: "bench.example.com ssh-ed25519 AAAA" });
process.once("SIGTERM", () => process.exit(1)); // as the action's handler ends a cancelled step
${ending}
setTimeout(() => {}, 10_000);
`;

/** Runs the program with RUNNER_TEMP set (and TMPDIR, with `alsoTmpdir`); returns how it ended and what it left there. */
async function run(
  dir: string,
  ending: string,
  alsoTmpdir: boolean,
): Promise<{ r: SpawnSyncReturns<string>; left: string[] }> {
  const entry = join(dir, "program.ts");
  const bundle = join(dir, "program.cjs");
  const runnerTemp = join(dir, "runner-temp");
  mkdirSync(runnerTemp, { recursive: true });
  writeFileSync(entry, program(ending));
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: bundle,
    logLevel: "error",
  });
  const r = spawnSync(process.execPath, [bundle], {
    env: { ...process.env, RUNNER_TEMP: runnerTemp, ...(alsoTmpdir ? { TMPDIR: runnerTemp } : {}) },
    encoding: "utf8",
  });
  return { r, left: readdirSync(runnerTemp).map((d) => join(runnerTemp, d)) };
}

describe("the host client's key", () => {
  it("is removed when the process exits from a signal handler without closing the client", async () => {
    const { r, left } = await run(scratchDir("client-key"), 'process.kill(process.pid, "SIGTERM");', true);
    expect(r.status, r.stderr).toBe(1);
    expect(left).toEqual([]);
  });

  it("is written, 0600, in the job's RUNNER_TEMP, which the runner empties after a process killed outright", async () => {
    const { r, left } = await run(scratchDir("client-key"), 'process.kill(process.pid, "SIGKILL");', false);
    expect(r.signal).toBe("SIGKILL");
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(/\/perf-gate-ssh-[^/]+$/);
    expect(statSync(join(left[0]!, "id")).mode & 0o777).toBe(0o600);
  });
});
