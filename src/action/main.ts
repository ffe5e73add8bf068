// The action's entry: resolve the job's settings once, run the mode, and turn any error into
// a failed step.
import * as core from "@actions/core";
import { type Connect, connectHostClient } from "../host/client";
import { cancelOpenChecksOnSignal } from "./github/open-checks";
import { getInputs, type Mode } from "./inputs";
import { type Job, resolveJob } from "./job";
import { runAccess } from "./modes/access";
import { runCalibrate } from "./modes/calibrate";
import { runCommand } from "./modes/command";
import { runGate } from "./modes/gate";
import { runPromote, runRollback } from "./modes/promote";
import { runRerun } from "./modes/rerun";
import { runnerEnv } from "./runner";

const modes: Record<Mode, (job: Job) => Promise<void>> = {
  access: runAccess,
  gate: runGate,
  command: runCommand,
  rerun: runRerun,
  promote: runPromote,
  rollback: runRollback,
  calibrate: runCalibrate,
};

/** The main step; `connect` reaches each host (over SSH, or the modes' tests' host in memory). */
export async function run(connect: Connect = connectHostClient): Promise<void> {
  let stopCancelling = () => {};
  try {
    const job = resolveJob(getInputs(), runnerEnv(), Date.now(), connect);
    // A cancelled step must not leave its check in_progress (docs/design/0014-who-runs-code.md).
    stopCancelling = cancelOpenChecksOnSignal(job.runUrl);
    await modes[job.mode](job);
  } catch (e) {
    core.setFailed((e as Error).message);
  } finally {
    stopCancelling();
  }
}
