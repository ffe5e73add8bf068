// A failure said as what it is, never as a performance verdict: the configuration's, the pull
// request's build's (its arm crashed, was never healthy, ran out of memory or disk, would not
// stop: the host's error kinds that name the challenger), or the infrastructure's. The check
// run, the sticky comment and the CLI's report.md say it in these words.
import { CouldNotMeasureError } from "../analysis/unmeasured";
import { HostError } from "../host/client";

export type FailureKind = "configuration" | "challenger" | "infrastructure";

export interface FailureWords {
  kind: FailureKind;
  /** A check run's title: "perf-gate: the challenger failed (challenger crashed)". */
  title: string;
  /** The report's first line, in Markdown. */
  said: string;
}

/**
 * `configuration`: whether the caller knows the error for the config's or its inputs'.
 * `challengerBuild`: what the challenger's arm ran, as the words name it; null where it ran no
 * build under test (an A/A run: both arms serve the champion).
 */
export function failureWords(
  e: Error,
  configuration: boolean,
  challengerBuild: string | null = "the pull request's build",
): FailureWords {
  // The host refusing the run's plan (a service spec the build cannot run) is the config's doing.
  const config = configuration || (e instanceof HostError && e.kind === "refused" && /\bplan: /.test(e.message));
  const kind: FailureKind = config
    ? "configuration"
    : challengerBuild !== null && e instanceof HostError && e.challengersFault
      ? "challenger"
      : "infrastructure";
  const what = e instanceof HostError ? (e.runFailure ?? e.kind).replace(/_/g, " ") : "internal";
  const title = {
    configuration: "perf-gate: configuration error",
    challenger: `perf-gate: the challenger failed (${what})`,
    infrastructure:
      e instanceof CouldNotMeasureError
        ? `perf-gate could not measure: ${e.brief}`
        : `perf-gate could not measure (${what})`,
  }[kind];
  const whose = {
    configuration: "a configuration problem",
    challenger: `${challengerBuild} failing on the benchmark host`,
    infrastructure: "an infrastructure failure",
  }[kind];
  return { kind, title, said: `**${title}.** This is ${whose}, not a performance verdict.` };
}
