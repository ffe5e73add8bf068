// The action's entry: read the inputs, run the mode, and turn any error into a failed step.
import * as core from "@actions/core";
import { getInputs, type Inputs, type Mode } from "./inputs";
import { runCalibrate } from "./modes/calibrate";
import { runCommand } from "./modes/command";
import { runGate } from "./modes/gate";
import { runPromote, runRollback } from "./modes/promote";
import { runRerun } from "./modes/rerun";
import { type RunnerEnv, runnerEnv } from "./runner";

const modes: Record<Mode, (inputs: Inputs, env: RunnerEnv) => Promise<void>> = {
  gate: runGate,
  command: runCommand,
  rerun: runRerun,
  promote: runPromote,
  rollback: runRollback,
  calibrate: runCalibrate,
};

export async function run(): Promise<void> {
  try {
    const inputs = getInputs();
    await modes[inputs.mode](inputs, runnerEnv());
  } catch (e) {
    core.setFailed((e as Error).message);
  }
}
