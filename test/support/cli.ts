// The perf-gate command from the bundle, as a user runs it: its exit code and output, whether
// it failed or not.
import { type ExecFileOptions, execFile } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./loadgen";

export const cli = join(repoRoot, "dist/cli.js");

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; a non-zero exit is a result, not an error. */
export function ran(file: string, args: readonly string[], options: ExecFileOptions = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(file, args, { maxBuffer: 64 << 20, ...options, encoding: "utf8" }, (err, stdout, stderr) =>
      resolve({
        code: err ? Number((err as { code?: number }).code ?? 1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      }),
    );
  });
}

/** perf-gate ARGS from the bundle (dist/cli.js) under this Node. */
export function perfGate(args: readonly string[], options: ExecFileOptions = {}): Promise<Ran> {
  return ran(process.execPath, [cli, ...args], options);
}
