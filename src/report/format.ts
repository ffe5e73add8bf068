// Number formatting shared by every report: enough digits to tell sub-millisecond effects
// apart, never so many that the table is noise.

/** A value in ms: 1 decimal from 10 ms, 2 from 0.1 ms, 3 below (0.07, 0.045); what rounds to 0 is 0.00. */
export function ms(x: number): string {
  const a = Math.abs(x);
  if (a >= 10) return x.toFixed(1);
  if (a >= 0.1) return x.toFixed(2);
  const text = x.toFixed(3).replace(/(\.\d\d)0$/, "$1");
  return Number(text) === 0 ? "0.00" : text; // never "-0.00": a sign on nothing reads as a direction
}

/** A signed value in ms: +0.93 or -0.93, and 0.00 unsigned. */
export function signedMs(x: number): string {
  const text = ms(x);
  return (x > 0 && text !== "0.00" ? "+" : "") + text;
}

/** An interval in ms: [-0.19, +0.18] ms. */
export function msInterval([lo, hi]: readonly [number, number]): string {
  return `[${signedMs(lo)}, ${signedMs(hi)}] ms`;
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
