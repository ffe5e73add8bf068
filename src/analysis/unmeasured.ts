// Outcomes that are never a verdict: the measurement itself failed. Each names what a user
// must change: the host (an infrastructure failure) or the config (a configuration error).

/**
 * The load generator fell behind itself in more than half of a comparison's pairs: what was
 * measured is the generator, not the service. An infrastructure failure.
 */
export class GeneratorDisturbedError extends Error {
  override name = "GeneratorDisturbedError";
}

/**
 * Most requests failed on both arms: the workload is wrong (a path, a method, a header), and a
 * verdict would pass it as "no change" (issue 12: a workload of 404s got grey). A configuration
 * error.
 */
export class FailingWorkloadError extends Error {
  override name = "FailingWorkloadError";
}
