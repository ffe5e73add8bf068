// `perf-gate analyze`: the verdict engine on result files, from a terminal.
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { AnalysisInputError, parseResult } from "../analysis/result-schema";
import { analyze, defaultSettings, type GateSettings, type NamedResult } from "../analysis/verdict";
import { svgChart } from "../report/chart";
import { analysisJson } from "../report/json";
import { markdownReport } from "../report/markdown";
import { quartet } from "../report/quartet";

export const analyzeUsage =
  "usage: perf-gate analyze [--slo-ms N] [--percentile P] [--block-threshold-percent X] [--floor-ms F]\n" +
  "                         [--confidence C] [--seed S] [--json] [--markdown FILE] [--svg FILE] [--each] RESULT.json…";

/** Runs the command; returns the exit code (0 pass, 1 blocking, 2 error). */
export function analyzeCommand(argv: string[], out: (line: string) => void): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "slo-ms": { type: "string" },
      percentile: { type: "string" },
      "block-threshold-percent": { type: "string" },
      "floor-ms": { type: "string" },
      confidence: { type: "string" },
      seed: { type: "string" },
      json: { type: "boolean", default: false },
      markdown: { type: "string" },
      svg: { type: "string" },
      each: { type: "boolean", default: false },
    },
  });
  if (positionals.length === 0) throw new AnalysisInputError(`no result files given\n${analyzeUsage}`);
  const num = (flag: string, fallback: number | undefined) => {
    const raw = values[flag as keyof typeof values];
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (typeof raw !== "string" || raw.trim() === "" || !Number.isFinite(n)) {
      throw new AnalysisInputError(`--${flag}: expected a number, got ${JSON.stringify(raw)}`);
    }
    return n;
  };
  const settings: GateSettings = {
    ...defaultSettings,
    sloBudgetMs: num("slo-ms", defaultSettings.sloBudgetMs)!,
    percentile: num("percentile", defaultSettings.percentile)!,
    blockThresholdPercent: num("block-threshold-percent", defaultSettings.blockThresholdPercent)!,
    confidence: num("confidence", defaultSettings.confidence)!,
    seed: num("seed", defaultSettings.seed)!,
    floorMs: num("floor-ms", undefined),
  };
  const results: NamedResult[] = positionals.map((file) => ({ name: file, result: parseResult(file, readJson(file)) }));
  if (values.each) {
    let code = 0;
    for (const r of results) {
      const a = analyze([r], settings);
      out(JSON.stringify({ file: r.name, ...analysisJson(a) }));
      if (a.blocking) code = 1;
    }
    return code;
  }
  const a = analyze(results, settings);
  if (values.markdown) writeFileSync(values.markdown, markdownReport(a));
  if (values.svg) writeFileSync(values.svg, svgChart(a.headline, a.percentile));
  if (values.json) out(JSON.stringify(analysisJson(a), null, 2));
  else {
    out(`${a.verdict.toUpperCase()}${a.blocking ? " (blocking)" : ""}: ${quartet(a.headline, a.percentile)}`);
    for (const f of a.comparisons.flatMap((c) => c.flags)) out(`  warning: ${f.code}: ${f.message}`);
  }
  return a.blocking ? 1 : 0;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new AnalysisInputError(`${file}: cannot read: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AnalysisInputError(`${file}: not JSON: ${(e as Error).message}`);
  }
}
