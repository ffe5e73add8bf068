// Runs the action's main step in this process, from src/ (no bundle, no rebuild, no root): the
// same inputs, environment and files as the runner gives dist/index.js (action-runner.ts), the
// same ActionRun back, with a benchmark host in memory (fake-host.ts) in place of SSH. The
// modes' branches are tested this way (test/action/modes.test.ts); the bundle, SSH and a real
// host are the e2e tests'.
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Connect } from "../../src/host/client";
import { GitHubHarness } from "./action-harness";
import { type ActionRun, type RunOptions, stepEnv, stepFiles, stepRun } from "./action-runner";
import type { FakeHost } from "./fake-host";
import { GitHubFake } from "./github-fake";
import { scratchDir } from "./scratch";

/**
 * @actions/core keeps the job summary's path from its first write, so every step in this
 * process writes one file, emptied before each step and copied to the step's own after it.
 */
const summaryFile = join(scratchDir("in-process"), "summary.md");

/** The host's inputs: valid as inputs, never used (the host is in memory). */
const HOST_INPUTS = {
  host: "bench.example.com",
  port: "22",
  user: "perf-gate-ci",
  "ssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot read: the host is in memory\n-----END OPENSSH PRIVATE KEY-----",
  "known-hosts": "bench.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAnotread",
};

/** The action's main step against the GitHub fake and a FakeHost, in this process. */
export class InProcessHarness extends GitHubHarness {
  private constructor(
    fake: GitHubFake,
    api: string,
    readonly host: FakeHost,
  ) {
    super(fake, api);
  }

  static async startWith(host: FakeHost): Promise<InProcessHarness> {
    const fake = new GitHubFake();
    return new InProcessHarness(fake, await fake.start(), host);
  }

  /** The action's inputs, with the host's for the modes that talk to it. */
  override inputs(mode: string, extra: Record<string, string> = {}): Record<string, string> {
    return super.inputs(mode, { ...(mode === "command" || mode === "access" ? {} : HOST_INPUTS), ...extra });
  }

  protected override step(
    inputs: Record<string, string>,
    env: Record<string, string>,
    payload: unknown,
    o: RunOptions,
  ): Promise<ActionRun> {
    if (o.script === "post" || o.started) throw new Error("the post step and cancellation run the bundle (runAction)");
    return runInProcess({ inputs, env, event: payload, connect: () => this.host.connect() });
  }
}

/** A step: its inputs, its environment beside the runner's, its event, and how it reaches the host. */
interface Step {
  inputs: Record<string, string>;
  env: Record<string, string>;
  event: unknown;
  connect: Connect;
}

/** One step at a time: a step owns process.env, process.stdout and process.exitCode while it runs. */
let running: Promise<unknown> = Promise.resolve();

function runInProcess(step: Step): Promise<ActionRun> {
  const done = running.then(() => runStep(step));
  running = done.catch(() => {});
  return done;
}

async function runStep({ inputs, env, event, connect }: Step): Promise<ActionRun> {
  const files = stepFiles(event);
  writeFileSync(summaryFile, "");
  const set = { ...stepEnv(files, inputs, env), GITHUB_STEP_SUMMARY: summaryFile };
  const saved = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
  Object.assign(process.env, set);
  const write = process.stdout.write;
  let stdout = "";
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  let code = 0;
  try {
    const { run } = await import("../../src/action/main");
    await run(connect);
    code = Number(process.exitCode ?? 0);
  } finally {
    process.exitCode = exitCode;
    process.stdout.write = write;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    copyFileSync(summaryFile, files.summary);
  }
  return stepRun(files, { code, signal: null, stdout });
}
