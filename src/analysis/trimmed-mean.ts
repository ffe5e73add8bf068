// Yuen's interval for a trimmed mean of the paired differences (Tukey & McLaughlin 1963; Yuen
// 1974; Wilcox, Introduction to Robust Estimation and Hypothesis Testing, 4th ed., §4.5): the mean
// of the middle 1 − 2γ of the sorted differences, with a standard error from their winsorized
// variance and Student t on h − 1 degrees of freedom (h differences kept). Pairs caught in a
// spell of the host's slowness differ by several times the rest; the trimmed mean gives them no
// weight, where they carry the plain mean and its t interval (docs/design/0012-slice-design.md).
import { mean, sampleVariance } from "simple-statistics";
import { studentTQuantile } from "./distributions";

export interface TrimmedMean {
  estimate: number;
  lo: number;
  hi: number;
}

/** The γ-trimmed mean of d and its Yuen interval (γ = 0.2 by default, Wilcox's choice). */
export function trimmedMean(d: readonly number[], confidence: number, gamma = 0.2): TrimmedMean {
  const n = d.length;
  if (!(gamma >= 0 && gamma < 0.5)) throw new RangeError(`trimmedMean: gamma must be in [0, 0.5), got ${gamma}`);
  const g = Math.floor(gamma * n);
  const h = n - 2 * g;
  if (h < 2) throw new RangeError(`trimmedMean: need at least 2 differences left after trimming, got ${h} of ${n}`);
  const sorted = [...d].sort((a, b) => a - b);
  const estimate = mean(sorted.slice(g, n - g));
  const low = sorted[g]!;
  const high = sorted[n - g - 1]!;
  const winsorized = sorted.map((x) => Math.min(Math.max(x, low), high));
  // (1 − 2γ) as Wilcox's trimci and scipy's trimmed_stde write it, not h/n: the larger of the two.
  const se = Math.sqrt(sampleVariance(winsorized)) / ((1 - 2 * gamma) * Math.sqrt(n));
  const q = studentTQuantile(1 - (1 - confidence) / 2, h - 1);
  return { estimate, lo: estimate - q * se, hi: estimate + q * se };
}
