// The files a job leaves behind, apart from judging: what the action's output-dir and the
// CLI's --out hold.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { CouldNotMeasureError } from "../analysis/unmeasured";
import type { Analysis } from "../analysis/verdict";
import type { History } from "../contract/history";
import { armsOf } from "../report/arms";
import { svgChart } from "../report/chart";
import { historyPage, type PageOptions } from "../report/history-page";
import { analysisJson } from "../report/json";

export interface Artifacts {
  reportPath: string;
  /** The profiles written beside the report (none unless the report shows the functions that moved). */
  profilePaths?: string[];
  resultPath: string;
  analysisPath: string;
  chartPath: string;
}

/** Where one host's files go: the output folder itself for a single host, a folder per host in a pool. */
export function hostOutDir(base: string, host: string, poolSize: number): string {
  return poolSize > 1 ? join(base, host.replace(/[^A-Za-z0-9._-]/g, "_")) : base;
}

/** report.md, analysis.json, chart.svg, and result.json: the host's documents, as received. */
export function writeArtifacts(
  dir: string,
  a: { analysis: Analysis; report: string; documents: readonly unknown[]; host?: string | null },
): Artifacts {
  const paths = {
    reportPath: join(dir, "report.md"),
    resultPath: writeResults(dir, a.documents),
    analysisPath: join(dir, "analysis.json"),
    chartPath: join(dir, "chart.svg"),
  };
  writeFiles(dir, [
    [paths.reportPath, a.report],
    [paths.analysisPath, JSON.stringify(analysisJson(a.analysis, a.host ?? null), null, 2)],
    [paths.chartPath, svgChart(a.analysis.headline, a.analysis.percentile, armsOf(a.analysis))],
  ]);
  return paths;
}

/**
 * result.json alone: the host's documents, written before anything is judged from them, so a
 * run that cannot be judged (a disturbed load generator, a failing workload) is still evidence.
 */
export function writeResults(dir: string, documents: readonly unknown[]): string {
  const path = join(dir, "result.json");
  writeFiles(dir, [[path, JSON.stringify(documents, null, 2)]]);
  return path;
}

/**
 * A gate that could not measure: report.md and analysis.json say what was measured and why
 * there is no verdict, beside result.json (the results it was judged from).
 */
export function writeUnmeasured(
  dir: string,
  e: NonNullable<CouldNotMeasureError["explained"]>,
): Omit<Artifacts, "chartPath"> {
  const paths = {
    reportPath: join(dir, "report.md"),
    resultPath: writeResults(dir, e.results),
    analysisPath: join(dir, "analysis.json"),
  };
  writeFiles(dir, [
    [paths.reportPath, e.markdown],
    [paths.analysisPath, JSON.stringify(e.json, null, 2)],
  ]);
  return paths;
}

/** history.html, the history page, and history.json, the document it was made from. */
export function writeHistoryPage(
  dir: string,
  history: History,
  document: unknown,
  o: PageOptions,
): { pagePath: string; jsonPath: string } {
  const paths = { pagePath: join(dir, "history.html"), jsonPath: join(dir, "history.json") };
  writeFiles(dir, [
    [paths.pagePath, historyPage(history, o)],
    [paths.jsonPath, `${JSON.stringify(document, null, 2)}\n`],
  ]);
  return paths;
}

/** Each profile at its path under dir (champion.pb.gz, or RUN-ID/champion.pb.gz); the paths written. */
export function writeProfiles(dir: string, profiles: readonly { path: string; bytes: Uint8Array }[]): string[] {
  return profiles.map(({ path, bytes }) => {
    const to = join(dir, path);
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, bytes);
    return to;
  });
}

/** report.md of a run that failed: what failed, whose failure it is, and the host's words (its arms' log tails). */
export function writeFailureReport(dir: string, report: string): string {
  const path = join(dir, "report.md");
  writeFiles(dir, [[path, report]]);
  return path;
}

/** calibration.md: the calibration report. */
export function writeCalibrationReport(dir: string, report: string): string {
  const path = join(dir, "calibration.md");
  writeFiles(dir, [[path, report]]);
  return path;
}

function writeFiles(dir: string, files: [string, string][]): void {
  mkdirSync(dir, { recursive: true });
  for (const [path, text] of files) writeFileSync(path, text);
}
