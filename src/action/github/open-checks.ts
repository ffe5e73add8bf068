// The check runs this step has opened and not yet finished. A cancelled workflow run used to
// leave its `perf-gate` check `in_progress` forever. Two things now complete it as
// cancelled: the main step's handler for SIGINT/SIGTERM (what the runner sends a step it
// cancels, before it kills it), and the post step (action.yml: `post-if: cancelled()`), which
// reads the ids this step saved as its state in case the step died before its handler ran.
import * as core from "@actions/core";

/** The state key (the post step reads it from STATE_perf-gate-open-checks). */
export const OPEN_CHECKS_STATE = "perf-gate-open-checks";

export const CANCELLED_TITLE = "perf-gate: cancelled before a verdict";

/** The summary of a cancelled check: said as such, never as a performance verdict. */
export function cancelledSummary(why: string, runUrl: string | null): string {
  return `**${CANCELLED_TITLE}.** ${why} This is not a performance verdict.${runUrl ? ` [The workflow run](${runUrl}).` : ""}\n\nA run already started on the benchmark host finishes there and holds the host until then; the next gate of this commit pools it with its own.\n`;
}

type Canceller = (summary: string) => Promise<void>;

const open = new Map<number, Canceller>();
/** Check runs being created: a signal waits for them, or one created just after it would stay open. */
const opening = new Set<Promise<unknown>>();
/** Checks whose final update is on its way: a signal must not overwrite the verdict. */
const finishing = new Set<number>();

function save(): void {
  core.saveState(OPEN_CHECKS_STATE, JSON.stringify([...open.keys()]));
}

/** Tracks a check run's creation until it settles. */
export function checkOpening<T>(created: Promise<T>): Promise<T> {
  opening.add(created);
  void created.finally(() => opening.delete(created)).catch(() => {});
  return created;
}

export function checkOpened(id: number, cancel: Canceller): void {
  open.set(id, cancel);
  save();
}

export function checkFinishing(id: number): void {
  finishing.add(id);
}

/** The final update is over: the check is closed if it succeeded, open again if not. */
export function checkFinished(id: number, closed = true): void {
  finishing.delete(id);
  if (closed && open.delete(id)) save();
}

/** The ids the main step saved and did not finish (read in the post step). */
export function savedOpenChecks(): number[] {
  const text = core.getState(OPEN_CHECKS_STATE);
  if (!text) return [];
  const ids: unknown = JSON.parse(text);
  return Array.isArray(ids) ? ids.filter((x): x is number => Number.isSafeInteger(x)) : [];
}

/**
 * On SIGINT or SIGTERM, completes this step's open checks as cancelled (within a few seconds:
 * the runner kills the step soon after) and exits. Returns a function that removes the handlers.
 */
export function cancelOpenChecksOnSignal(
  runUrl: string | null,
  exit: (code: number) => never = process.exit,
): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    core.warning(`perf-gate: ${signal}: the step is being cancelled; completing its open check as cancelled`);
    const summary = cancelledSummary(
      `The workflow run was cancelled (${signal}: a newer push, a person, or a timeout) while perf-gate was working.`,
      runUrl,
    );
    const cancelAll = async () => {
      await Promise.allSettled([...opening]);
      await Promise.all(
        [...open.entries()]
          .filter(([id]) => !finishing.has(id))
          .map(([id, cancel]) =>
            cancel(summary).then(
              () => checkFinished(id),
              (e: Error) => core.warning(`could not complete check ${id} as cancelled: ${e.message}`),
            ),
          ),
      );
    };
    const deadline = new Promise((resolve) => setTimeout(resolve, 5_000).unref());
    void Promise.race([cancelAll(), deadline]).finally(() => exit(1));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}
