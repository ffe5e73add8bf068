// Outcomes that are never a verdict: the measurement itself failed. Each names what a user
// must change: the host (an infrastructure failure) or the config (a configuration error).

/**
 * The measurement cannot vouch for itself, so there is no verdict: an infrastructure failure.
 * The gate still reports what was measured (report/unmeasured.ts): `explained` carries it once
 * the gate has written it.
 */
export class CouldNotMeasureError extends Error {
  override name = "CouldNotMeasureError";
  explained?: { markdown: string; json: unknown; results: readonly unknown[] };
  /** What could not be vouched for, in a few words: "the load generator was disturbed". */
  readonly brief: string;
  constructor(message: string, brief: string) {
    super(message);
    this.brief = brief;
  }
}

/**
 * The load generator fell behind itself, or the host saw foreign load, in more than half of a
 * comparison's pairs: what was measured is the host, not the service.
 */
export class GeneratorDisturbedError extends CouldNotMeasureError {
  override name = "GeneratorDisturbedError";
}

/**
 * Fewer than two pairs were valid, the generator having refused the other slices (their queue
 * overflowed, the idle arm was at work, the run was cut short). Could not measure; but in a
 * promotion's A/A check, where both arms run the new champion, a build that cannot take the rate
 * is the build's failure (modes/promote.ts).
 */
export class TooFewPairsError extends CouldNotMeasureError {
  override name = "TooFewPairsError";
}

/**
 * Most requests failed on both arms: the workload is wrong (a path, a method, a header), and a
 * verdict would pass it as "no change" (docs/design/0011-instrument-vouches-for-itself.md: a
 * workload of 404s got grey). A configuration error.
 */
export class FailingWorkloadError extends Error {
  override name = "FailingWorkloadError";
}

/**
 * Most requests failed on the champion and not on the challenger: the champion did not serve
 * the workload (an old build without the method, a crash loop), and its fast failures are no
 * baseline for a latency verdict. An infrastructure failure: could not measure, naming it.
 */
export class ChampionFailedError extends CouldNotMeasureError {
  override name = "ChampionFailedError";
}
