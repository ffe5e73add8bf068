// The action's entry: read the inputs, run the mode, and turn any error into a failed step.
import * as core from "@actions/core";
import { runGate, runnerEnv } from "./gate";
import { getInputs } from "./inputs";

export async function run(): Promise<void> {
  try {
    const inputs = getInputs();
    switch (inputs.mode) {
      case "gate":
        await runGate(inputs, runnerEnv());
        break;
    }
  } catch (e) {
    core.setFailed((e as Error).message);
  }
}
