// Number and text formatting shared by every report: enough digits to tell sub-millisecond effects
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

/** A signed percent with one decimal: +29.3%, -4.0%, 0.0%. */
export function signedPercent(x: number): string {
  const text = x.toFixed(1);
  return `${x > 0 && text !== "0.0" ? "+" : ""}${text === "-0.0" ? "0.0" : text}%`;
}

/** A memory size in MiB: 12.3 MiB (0.05 MiB below 1). */
export function mib(bytes: number): string {
  const m = bytes / (1 << 20);
  return `${Math.abs(m) >= 1 ? m.toFixed(1) : m.toFixed(2)} MiB`;
}

/** CPU time in µs: 812 µs, 3.4 µs. */
export function micros(us: number): string {
  return `${Math.abs(us) >= 100 ? us.toFixed(0) : Math.abs(us) >= 10 ? us.toFixed(1) : us.toFixed(2)} µs`;
}

/** A name as inline code that neither a backtick nor a pipe or line break can break out of. */
export function codeSpan(name: string): string {
  return `\`${name.replace(/[`|\n\r]/g, "'")}\``;
}

/**
 * Text as a fenced code block that nothing in it can close: its fence is longer than any run of
 * backticks in the text (CommonMark closes a fence only with one at least as long), so a log
 * line of backticks shows as written and what follows it stays inside the block.
 */
export function codeBlock(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}\n${text}\n${fence}`;
}

/** An error's first line: where a report quotes a failure in a sentence or a list item. */
export function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0]!;
}
