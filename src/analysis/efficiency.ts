// How far an interval is from the narrowest the same requests allow: its half-width beside the
// one a host with no noise of its own would give (each slice's requests resampled within its arm
// and pair), and what would narrow it. Variances add: when the host's part is over half of the
// estimate's variance (the standard error over √2 times the sampling limit's), a quieter host
// narrows the interval more than more requests would; under half, more requests do.

export interface Efficiency {
  halfWidthMs: number;
  /** The half-width the same requests would give with no host noise. */
  samplingHalfWidthMs: number;
  /** How much wider the interval is than its sampling limit, in percent (0 when it is not wider). */
  hostAddsPercent: number;
  /** What would narrow the interval more. */
  narrowedBy: "quieter host" | "more requests";
}

export function efficiencyOf(ci: readonly [number, number], seMs: number, samplingSeMs: number): Efficiency {
  const halfWidthMs = (ci[1] - ci[0]) / 2;
  const ratio = samplingSeMs > 0 ? seMs / samplingSeMs : 1;
  return {
    halfWidthMs,
    samplingHalfWidthMs: halfWidthMs / ratio,
    hostAddsPercent: Math.max(0, 100 * (ratio - 1)),
    narrowedBy: ratio > Math.SQRT2 ? "quieter host" : "more requests",
  };
}

/** The sentence a report says it in. */
export function efficiencySentence(e: Efficiency): string {
  const limit = `the same requests with no host noise would give ±${e.samplingHalfWidthMs.toFixed(3)} ms`;
  if (e.hostAddsPercent < 0.5)
    return `${limit}: the interval is at its sampling limit; more requests would narrow it, a quieter host would not`;
  return e.narrowedBy === "quieter host"
    ? `${limit}: host noise adds ${e.hostAddsPercent.toFixed(0)}% to this interval; a quieter host would narrow it, more requests would not`
    : `${limit}: host noise adds ${e.hostAddsPercent.toFixed(0)}% to this interval; more requests would narrow it, a quieter host would not`;
}
