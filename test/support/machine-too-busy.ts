// The one rule by which a test on real processes says "machine too busy". A measurement the
// host could not vouch for (its load generator fell behind, other work took its CPUs) failed
// the machine, not the code: a test whose premise is that measurement skips, naming why,
// rather than asserting on it. So is one whose noise hid a slowdown the test knows is there (a
// grey whose interval reaches it). A test may measure again first (`untilQuiet`, `untilResolved`),
// never more than three times in all.
import type { TestContext } from "vitest";

/**
 * How perf-gate says a run was disturbed, in a CLI's output or an action's log: a gate that could
 * not measure, or a calibration that recorded no floor, for it.
 */
const DISTURBED =
  /could not measure: the (load generator|host) was disturbed[^\n%]*|not recorded: (the load generator fell behind|other work took the host's CPU)[^\n;]*/;

/** The disturbance a command's output reports, or null. */
export function disturbedIn(output: string): string | null {
  return DISTURBED.exec(output)?.[0] ?? null;
}

/** Why a `perf-gate run` could not vouch for its measurement (it exits 2 saying so), or null. */
export function machineTooBusy(r: { code: number; stdout: string; stderr: string }): string | null {
  return r.code === 2 ? disturbedIn(r.stderr + r.stdout) : null;
}

/** Skips the test: the machine, not the code, failed its premise. */
export function skipTooBusy(ctx: TestContext, why: string): never {
  const note = `machine too busy: ${why}`;
  console.log(`[${ctx.task.name}] ${note}`);
  return ctx.skip(note);
}

export function skipIfMachineTooBusy(ctx: TestContext, r: { code: number; stdout: string; stderr: string }): void {
  const busy = machineTooBusy(r);
  if (busy) skipTooBusy(ctx, busy);
}

/** Skips when an action step's log says it could not vouch for its measurement. */
export function skipIfDisturbed(ctx: TestContext, run: { stdout: string }): void {
  const busy = disturbedIn(run.stdout);
  if (busy) skipTooBusy(ctx, busy);
}

/**
 * Measures up to `tries` times (three, the limit) while `attempt` says the machine was too busy
 * (a string naming why), then skips naming every try: spells of a busy VM last seconds, a retry
 * often finds it quiet.
 */
export async function untilQuiet<T>(
  ctx: TestContext,
  attempt: (n: number) => Promise<{ busy: string } | { value: T }>,
  tries = 3,
): Promise<T> {
  const said: string[] = [];
  for (let n = 0; n < tries; n++) {
    const r = await attempt(n);
    if ("value" in r) return r.value;
    said.push(`try ${n + 1}: ${r.busy}`);
  }
  return skipTooBusy(ctx, `${tries} tries could not measure\n${said.join("\n")}`);
}

/**
 * Whether a gate meant to see a known slowdown could not resolve it: grey, its interval holding
 * both no change and the slowdown, so the run could not tell them apart and the machine's noise
 * hid it (CI once pooled 9 pairs into [-3.3, +11.0] ms for a +0.9 ms build, and once gave one
 * run's 6 pairs [-0.27, +1.46] ms). A grey whose interval stops short of the slowdown, or a green,
 * is the gate's own fault, not this: a correct gate's 97.5% interval misses the true change from
 * above in about 1.25% of runs. (The rule used to be "wider than twice the slowdown", which failed
 * a correct gate about half the time when its interval was just under that.)
 */
export function unresolved(run: { outputs: Record<string, string | undefined> }, slowdownMs: number): boolean {
  return run.outputs.verdict === "grey" && Number(run.outputs["ci-high-ms"]) >= slowdownMs;
}

/**
 * Measures again a build whose runs pool (a rerun, a push of the same head) while the pooled
 * interval is too wide to resolve its known slowdown, as a writer would (`untilQuiet`, with the
 * test's own first measurement counted among the three): `again(n)` is measurement n + 1. Given
 * that first measurement, it is the answer when it resolves the slowdown. A disturbed run skips at
 * once (the one rule). Returns the last run and how many ran in all.
 */
export function untilResolved<T extends { stdout: string; outputs: Record<string, string | undefined> }>(
  ctx: TestContext,
  slowdownMs: number,
  again: (n: number) => Promise<T>,
  first?: T,
): Promise<{ run: T; runs: number }> {
  // Measurements made before the first try: the test's own first, unless it is given here.
  const before = first ? 0 : 1;
  return untilQuiet<{ run: T; runs: number }>(
    ctx,
    async (n) => {
      const run = first && n === 0 ? first : await again(n + before);
      skipIfDisturbed(ctx, run);
      return unresolved(run, slowdownMs)
        ? {
            busy: `the pooled interval [${run.outputs["ci-low-ms"]}, ${run.outputs["ci-high-ms"]}] ms cannot resolve +${slowdownMs} ms`,
          }
        : { value: { run, runs: n + 1 + before } };
    },
    3 - before,
  );
}
