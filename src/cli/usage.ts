// Usage errors: the command line itself is wrong. The CLI prints the message and the
// command's usage, and exits 2.
import { resolve } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";

type Token = NonNullable<ReturnType<typeof parseArgs<ParseArgsConfig & { tokens: true }>>["tokens"]>[number];
type OptionToken = Extract<Token, { kind: "option" }>;

export class UsageError extends Error {
  override name = "UsageError";
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

/**
 * node:util's parseArgs, with its errors (an unknown option, a missing value) as usage errors,
 * and an option that takes one value given twice refused: parseArgs keeps the last, so
 * `--out a.json --out b.json` would drop a.json without a word.
 */
export function parseCommandLine<T extends ParseArgsConfig>(config: T, usage: string): ReturnType<typeof parseArgs<T>> {
  let parsed: { tokens?: Token[] };
  try {
    parsed = parseArgs({ ...config, tokens: true });
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ""), usage);
  }
  const given = new Map<string, OptionToken[]>();
  for (const t of parsed.tokens ?? [])
    if (t.kind === "option" && !config.options?.[t.name]?.multiple)
      given.set(t.name, [...(given.get(t.name) ?? []), t]);
  for (const [name, uses] of given) {
    // The same value twice loses nothing.
    if (new Set(uses.map((t) => t.value)).size < 2) continue;
    const said = uses.map((t) => `${t.rawName} ${t.value ?? ""}`.trimEnd());
    throw new UsageError(`--${name}: given ${uses.length} times (${said.join(", ")}); give it once`, usage);
  }
  return parsed as unknown as ReturnType<typeof parseArgs<T>>;
}

/** A number option: its value, or the fallback when absent. */
export function numberOption(flag: string, raw: unknown, usage: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  // Decimal only: Number() also reads "0x10", "0b1" and "".
  if (typeof raw !== "string" || !/^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(raw) || !Number.isFinite(n)) {
    throw new UsageError(`--${flag}: expected a number, got ${JSON.stringify(raw)}`, usage);
  }
  return n;
}

/**
 * Refuses files named twice among a command's inputs and outputs (each [flag, path], unset ones
 * undefined): an output written over an input, or two outputs over each other, loses one.
 */
export function distinctFiles(files: readonly [string, string | undefined][], usage: string): void {
  const seen = new Map<string, string>();
  for (const [flag, path] of files) {
    if (path === undefined) continue;
    const full = resolve(path);
    const other = seen.get(full);
    if (other !== undefined) throw new UsageError(`${flag} ${path}: the same file as ${other}; name another`, usage);
    seen.set(full, `${flag} ${path}`);
  }
}
