// Number formatting shared by every report: enough digits to tell sub-millisecond effects
// apart, never so many that the table is noise.

/** A value in ms: 1 decimal from 10 ms, 2 from 0.1 ms, 3 below (0.07, 0.045). */
export function ms(x: number): string {
  const a = Math.abs(x);
  if (a >= 10) return x.toFixed(1);
  if (a >= 0.1 || a === 0) return x.toFixed(2);
  return x.toFixed(3).replace(/(\.\d\d)0$/, "$1");
}

/** A signed value in ms: +0.93 or -0.93. */
export function signedMs(x: number): string {
  return (x > 0 ? "+" : "") + ms(x);
}

export function percentLabel(p: number): string {
  return `p${p}`;
}

export function confidenceLabel(c: number): string {
  return `${Number((c * 100).toFixed(2))}%`;
}

export function pValue(p: number): string {
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

export function rps(x: number): string {
  return x.toFixed(1);
}
