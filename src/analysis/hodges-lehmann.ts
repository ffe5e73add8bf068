// The Hodges-Lehmann estimate of the centre of the paired differences, and its distribution-free
// interval from the Wilcoxon signed-rank test (Hollander & Wolfe, Nonparametric Statistical
// Methods, 3rd ed., §3.3). Per-slice tail percentiles on a shared host are heavy-tailed: a few
// pairs caught in a stall differ by ten times the rest, and carry a mean and its t interval with
// them. The median of the Walsh averages gives those pairs one rank each
// (docs/design/0012-slice-design.md).

export interface HodgesLehmann {
  estimate: number;
  lo: number;
  hi: number;
  /** The confidence the interval really has (the signed-rank distribution is discrete). */
  confidence: number;
}

/**
 * The number of subsets of {1..n} with each rank sum: the exact null distribution of the
 * signed-rank statistic W+ (without ties), as counts over 2^n.
 */
function signedRankCounts(n: number): number[] {
  const max = (n * (n + 1)) / 2;
  const counts = new Array<number>(max + 1).fill(0);
  counts[0] = 1;
  for (let r = 1; r <= n; r++) {
    for (let w = max; w >= r; w--) counts[w]! += counts[w - r]!;
  }
  return counts;
}

/** Median of the Walsh averages and the interval that inverts the exact signed-rank test. */
export function hodgesLehmann(d: readonly number[], confidence: number): HodgesLehmann {
  const n = d.length;
  if (n < 2) throw new RangeError(`hodgesLehmann: need at least 2 differences, got ${n}`);
  const walsh: number[] = [];
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) walsh.push((d[i]! + d[j]!) / 2);
  walsh.sort((a, b) => a - b);
  const m = walsh.length;
  const estimate = m % 2 ? walsh[(m - 1) / 2]! : (walsh[m / 2 - 1]! + walsh[m / 2]!) / 2;
  // k: the largest count with P(W+ < k) ≤ α/2; the interval is [W_(k), W_(m+1−k)] (1-based).
  const counts = signedRankCounts(n);
  const total = 2 ** n;
  const alpha = 1 - confidence;
  let k = 0;
  let below = 0; // P(W+ ≤ k − 1)
  while (k < m && below + counts[k]! / total <= alpha / 2) below += counts[k++]! / total;
  if (k === 0) return { estimate, lo: walsh[0]!, hi: walsh[m - 1]!, confidence: 1 - 2 * (counts[0]! / total) };
  return { estimate, lo: walsh[k - 1]!, hi: walsh[m - k]!, confidence: 1 - 2 * below };
}
