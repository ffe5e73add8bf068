// The action's entry: resolve the job's settings once, run the mode, and turn any error into
// a failed step.
import * as core from "@actions/core";
import { getInputs, type Mode } from "./inputs";
import { type Job, resolveJob } from "./job";
import { runCalibrate } from "./modes/calibrate";
import { runCommand } from "./modes/command";
import { runGate } from "./modes/gate";
import { runPromote, runRollback } from "./modes/promote";
import { runRerun } from "./modes/rerun";
import { runnerEnv } from "./runner";

const modes: Record<Mode, (job: Job) => Promise<void>> = {
  gate: runGate,
  command: runCommand,
  rerun: runRerun,
  promote: runPromote,
  rollback: runRollback,
  calibrate: runCalibrate,
};

export async function run(): Promise<void> {
  try {
    const job = resolveJob(getInputs(), runnerEnv());
    await modes[job.mode](job);
  } catch (e) {
    core.setFailed((e as Error).message);
  }
}
