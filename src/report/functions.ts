// The functions that moved, in a report (docs/design/0021-profiles.md): near the top, one line
// with the functions whose CPU per request grew most, each with its interval and the noise it
// passed, and where the profiles are; in each comparison's section, the table, folded. Pure.
import type { FunctionBreakdown, FunctionChange } from "../analysis/functions";
import type { Comparison } from "../analysis/verdict";
import type { Arms } from "./arms";
import { codeSpan, confidenceLabel } from "./format";

/** How many functions the top line names, and the folded table lists per direction. */
const TOP = 5;
const TABLE = 15;

/** "**Functions that moved:** …", "**Profiles:** not available (why)", or null when none were asked for. */
export function functionsSentence(c: Comparison, prefix: string, arms: Arms, runs: number): string | null {
  const f = c.functions;
  if (f.status === "not_asked") return null;
  if (f.status === "not_available")
    return `**Profiles${prefix}:** not available (${f.reason}); the verdict is the same without them.`;
  const files = profileFiles(f, runs);
  if (f.grew.length === 0 && f.shrank.length === 0) {
    return `**Functions${prefix}:** no function's CPU per request moved past its noise (${f.tested} functions, each at ${confidenceLabel(f.confidence)}; median noise ±${us(f.medianNoiseUs ?? 0)} per request)${files}.`;
  }
  const list = (xs: readonly FunctionChange[]) =>
    xs
      .slice(0, TOP)
      .map(
        (x) =>
          `${codeSpan(x.name)} ${signedUs(x.estimateUs)} [${signedUs(x.ciUs[0])}, ${signedUs(x.ciUs[1])}] (${us(x.championUs)} → ${us(x.challengerUs)})`,
      )
      .join("; ");
  const grew = f.grew.length > 0 ? `grew in the ${arms.challenger}: ${list(f.grew)}` : "";
  const shrank = f.shrank.length > 0 ? `${grew ? "; " : ""}shrank: ${list(f.shrank)}` : "";
  return `**Functions that moved${prefix}** (CPU per request with what each calls, each past its own noise at ${confidenceLabel(f.confidence)} over ${f.tested} functions): ${grew}${shrank}${files}.`;
}

/** The folded table: each function that moved, both arms, its change, own-time change and noise; and what sampling cost. */
export function functionsTable(c: Comparison, arms: Arms): string[] {
  const f = c.functions;
  if (f.status !== "recorded") return [];
  const rows = [...f.grew.slice(0, TABLE), ...f.shrank.slice(0, TABLE)];
  const cost = `Sampled with perf (cpu-clock, ${f.frequencyHz} Hz per CPU) on each arm's cgroup in its own slices: ${f.samples.champion.toLocaleString("en-US")} samples of the ${arms.champion}, ${f.samples.challenger.toLocaleString("en-US")} of the ${arms.challenger}; perf itself used ${f.samplerCpuSeconds.toFixed(2)} CPU s, counted as neither arm's.`;
  return [
    "",
    `<details><summary>Functions: CPU per request (µs) with what each calls, ${arms.difference}, at ${confidenceLabel(f.confidence)} each</summary>`,
    "",
    ...(rows.length === 0
      ? ["No function moved past its noise."]
      : [
          `| function | ${arms.champion} | ${arms.challenger} | change | own time change | noise |`,
          "|---|---:|---:|---|---:|---:|",
          ...rows.map(
            (x) =>
              `| ${codeSpan(x.name)} | ${us(x.championUs)} | ${us(x.challengerUs)} | ${signedUs(x.estimateUs)} [${signedUs(x.ciUs[0])}, ${signedUs(x.ciUs[1])}] | ${signedUs(x.selfEstimateUs)} | ±${us(x.noiseUs)} |`,
          ),
        ]),
    "",
    cost,
    "",
    "</details>",
  ];
}

/**
 * Where a run's profile goes beside the report: champion.pb.gz and challenger.pb.gz when one run
 * has profiles, else each run's in a directory of its own (RUN-ID/champion.pb.gz).
 */
export function profilePath(run: string, file: string, profiledRuns: number): string {
  return profiledRuns > 1 ? `${run}/${file}` : file;
}

/** The runs whose profiles a report shows, over every comparison. */
export function profiledRuns(comparisons: readonly Comparison[]): number {
  return new Set(comparisons.flatMap((c) => c.functions.files.map((x) => x.run))).size;
}

function profileFiles(f: FunctionBreakdown, runs: number): string {
  if (f.files.length === 0) return "";
  const name = (x: FunctionBreakdown["files"][number]) => profilePath(x.run, x.file, runs);
  const champion = f.files.find((x) => x.arm === "champion");
  const challenger = f.files.find((x) => x.arm === "challenger");
  const sizes = f.files.map((x) => `${name(x)} ${kib(x.bytes)}`).join(", ");
  const diff = champion && challenger ? `: \`go tool pprof -diff_base ${name(champion)} ${name(challenger)}\`` : "";
  return `; profiles ${sizes}${diff}`;
}

const us = (x: number) => `${Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)} µs`;
const signedUs = (x: number) => `${x > 0 ? "+" : ""}${us(x)}`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
