// The action's post step (action.yml: `post: dist/post.js`, `post-if: cancelled()`): when the job
// was cancelled, completes as cancelled the checks the main step opened and did not finish (it
// saved their ids as its state), unless its own signal handler already did
// (docs/design/0014-who-runs-code.md).
import * as core from "@actions/core";
import { GitHub } from "./github/client";
import { cancelledSummary, savedOpenChecks } from "./github/open-checks";
import { ownerAndRepo, runnerEnv, runUrl } from "./runner";

export async function post(): Promise<void> {
  try {
    const ids = savedOpenChecks();
    if (ids.length === 0) return core.info("perf-gate: the main step left no check open");
    const env = runnerEnv();
    const gh = new GitHub(core.getInput("github-token", { required: true }), ...ownerAndRepo(env), (l) => core.info(l));
    const summary = cancelledSummary(
      "The workflow run was cancelled (a newer push, a person, or a timeout) while perf-gate was working.",
      runUrl(env),
    );
    for (const id of ids) {
      core.info(
        (await gh.cancelCheckIfOpen(id, summary))
          ? `perf-gate: check ${id} completed as cancelled`
          : `perf-gate: check ${id} was already complete`,
      );
    }
  } catch (e) {
    core.warning(`perf-gate: could not complete the open check as cancelled: ${(e as Error).message}`);
  }
}

await post();
