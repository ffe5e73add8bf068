// `perf-gate analyze`: the verdict engine on result files, from a terminal.
import { writeFileSync } from "node:fs";
import { AnalysisInputError } from "../analysis/input-error";
import { analyze, defaultSettings, type GateSettings, type NamedResult, SETTING_FORMS } from "../analysis/verdict";
import { parseResult } from "../contract/result";
import { armsOf } from "../report/arms";
import { svgChart } from "../report/chart";
import { analysisJson } from "../report/json";
import { verdictLines } from "../report/lines";
import { markdownReport } from "../report/markdown";
import { readBounded } from "./bounded-file";
import { distinctFiles, numberOption, parseCommandLine, UsageError } from "./usage";

export const analyzeUsage = `usage: perf-gate analyze [options] RESULT.json…
  RESULT.json            a load generator's result, a host's, or the result.json perf-gate run
                         writes (a list of them); several are reruns of one build and are pooled
  --slo-ms N             the SLO budget in ms (default ${defaultSettings.sloBudgetMs})
  --percentile P         the SLO's percentile (default ${defaultSettings.percentile})
  --block-threshold-percent X   a red blocks past X% of the budget (default ${defaultSettings.blockThresholdPercent})
  --floor-ms F           the host's A/A floor in ms, at the percentile
  --block-cpu-percent N  block when CPU per request regresses past N% over the whole interval
  --confidence C         of all looks at one build together; the first look is at
                         1 − (1 − C)/2, each rerun pooled a further look (default ${defaultSettings.confidence})
  --seed S               of the bootstrap (default ${defaultSettings.seed})
  --json                 print the analysis as JSON
  --markdown FILE        write the report
  --svg FILE             write the chart
  --each                 analyse each result on its own, one JSON line each
  -h, --help             this text
exit codes: 0 pass, 1 blocking regression, 2 error (the message names the file and field)`;

/** Runs the command; returns the exit code (0 pass, 1 blocking, 2 error). */
export function analyzeCommand(argv: string[], out: (line: string) => void): number {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      allowPositionals: true,
      options: {
        "slo-ms": { type: "string" },
        percentile: { type: "string" },
        "block-threshold-percent": { type: "string" },
        "floor-ms": { type: "string" },
        "block-cpu-percent": { type: "string" },
        confidence: { type: "string" },
        seed: { type: "string" },
        json: { type: "boolean", default: false },
        markdown: { type: "string" },
        svg: { type: "string" },
        each: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    },
    analyzeUsage,
  );
  if (values.help) {
    out(analyzeUsage);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError("no result files given", analyzeUsage);
  distinctFiles(
    [
      ...positionals.map((p): [string, string] => ["the result", p]),
      ["--markdown", values.markdown],
      ["--svg", values.svg],
    ],
    analyzeUsage,
  );
  const num = (flag: keyof typeof FLAG_SETTINGS, fallback: number | undefined) => {
    const n = numberOption(flag, values[flag], analyzeUsage);
    const setting = FLAG_SETTINGS[flag];
    const [ok, want] = setting === "floorMs" ? FLOOR_FORM : SETTING_FORMS[setting];
    if (n !== undefined && !ok(n))
      throw new UsageError(`--${flag}: expected ${want}, got ${values[flag]}`, analyzeUsage);
    return n ?? fallback;
  };
  const settings: GateSettings = {
    ...defaultSettings,
    sloBudgetMs: num("slo-ms", defaultSettings.sloBudgetMs)!,
    percentile: num("percentile", defaultSettings.percentile)!,
    blockThresholdPercent: num("block-threshold-percent", defaultSettings.blockThresholdPercent)!,
    confidence: num("confidence", defaultSettings.confidence)!,
    seed: num("seed", defaultSettings.seed)!,
    floorMs: num("floor-ms", undefined),
    blockCpuPercent: num("block-cpu-percent", undefined),
  };
  const results = positionals.flatMap(readResults);
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
  if (values.svg) writeFileSync(values.svg, svgChart(a.headline, a.percentile, armsOf(a)));
  if (values.json) out(JSON.stringify(analysisJson(a), null, 2));
  else for (const line of verdictLines(a)) out(line);
  return a.blocking ? 1 : 0;
}

/** The setting each number flag sets: its form is the analysis's own, said with the flag's name. */
const FLAG_SETTINGS = {
  "slo-ms": "sloBudgetMs",
  percentile: "percentile",
  "block-threshold-percent": "blockThresholdPercent",
  confidence: "confidence",
  seed: "seed",
  "floor-ms": "floorMs",
  "block-cpu-percent": "blockCpuPercent",
} as const;

/** A floor given by hand (the host's own floors are its records). */
const FLOOR_FORM: [(n: number) => boolean, string] = [(n) => n >= 0, "a non-negative number of ms"];

/** A file's results: one document, or a list of them (what perf-gate run writes), each named. */
function readResults(file: string): NamedResult[] {
  const doc = readJson(file);
  if (!Array.isArray(doc)) return [{ name: file, result: parseResult(file, doc) }];
  if (doc.length === 0) throw new AnalysisInputError(`${file}: an empty list of results`);
  return doc.map((d, i) => ({ name: `${file}[${i}]`, result: parseResult(`${file}[${i}]`, d) }));
}

/** More than any host's results: a gate of many workloads and rates, every slice's histograms. */
const MAX_RESULTS_BYTES = 512 << 20;

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readBounded(file, MAX_RESULTS_BYTES, "a result").toString("utf8");
  } catch (e) {
    throw new AnalysisInputError((e as Error).message);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AnalysisInputError(`${file}: not JSON: ${(e as Error).message}`);
  }
}
