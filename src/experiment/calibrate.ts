// calibrate: the A/A protocol on a host, for every workload and rate of a config. Each
// comparison's interval is stored as the host's floor for its key; one that excludes 0 is
// measured once more first, and the confirmation run is what is stored: an unbiased host
// excludes 0 by chance in 1 run of 20, both of two independent runs in 1 of 400, while a real
// bias persists. A floor is never recorded from a run the host flagged or in which the load
// generator fell behind (the calibration says why). Shared by mode calibrate and
// `perf-gate run --aa`.

import { type Calibration, calibrations, excludesZero, floorRecord } from "../analysis/floors";
import type { Analysis, Comparison } from "../analysis/verdict";
import { configFor, type GateConfig } from "../config/gate-config";
import type { StoredFloor } from "../contract/host";
import type { BenchmarkHost } from "../host/client";
import { calibrationLine, calibrationReport } from "../report/calibration";
import { driftReport } from "../report/drift";
import { markdownReport } from "../report/markdown";
import { identityNotes } from "../report/notes";
import { type Artifacts, writeArtifacts, writeCalibrationReport } from "./artifacts";
import { decide } from "./decide";
import { type DriftRun, measureDrift } from "./history";
import { type Measurement, measure } from "./measure";

export interface CalibrationRun {
  /** The A/A runs judged raw: no floor or earlier bias colours a calibration. */
  analysis: Analysis;
  calibrations: Calibration[];
  /** The floors stored before this calibration. */
  history: StoredFloor[];
  /** Every run's document: the first runs, then the confirmations. */
  documents: unknown[];
}

export type CalibrationOptions = Omit<Measurement, "kind" | "challenger" | "pool"> & {
  /** Progress of the confirmation runs. */
  confirmProgress?: Measurement["progress"];
};

export async function calibrate(
  host: BenchmarkHost,
  config: GateConfig,
  o: CalibrationOptions,
): Promise<CalibrationRun> {
  const aa = (c: GateConfig, runIdPrefix: string, progress: Measurement["progress"]) =>
    measure(host, c, { ...o, runIdPrefix, progress, kind: "aa", pool: false });
  const first = await aa(config, o.runIdPrefix, o.progress);
  const analysis = decide(first.results, config, { seed: o.seed });
  const history = await host.floorHistory();
  const documents = [...first.documents];
  const firstRuns = new Map<string, Comparison>();
  const latest: Comparison[] = [];
  const preflight = [...analysis.preflight];
  const confirmProgress = o.confirmProgress ?? o.progress;
  for (const [i, c] of analysis.comparisons.entries()) {
    if (!excludesZero(c.ciMs)) {
      latest.push(c);
      continue;
    }
    const again = await aa(configFor(config, c.workload, c.rate), `${o.runIdPrefix}-confirm${i}`, confirmProgress);
    documents.push(...again.documents);
    firstRuns.set(c.key, c);
    const confirmation = decide(again.results, config, { seed: o.seed });
    latest.push(confirmation.comparisons[0]!);
    preflight.push(...confirmation.preflight);
  }
  const cs = calibrations(latest, history, { percentile: config.slo.percentile, preflight, firstRuns });
  for (const c of cs.filter((x) => x.notRecorded === null)) await host.recordFloor(c.runId, floorRecord(c));
  return { analysis, calibrations: cs, history, documents };
}

export interface ReportedCalibration extends CalibrationRun {
  /** The calibration report: identity notes, floors, drift, the floor history, main's drift against an ancestor. */
  report: string;
  artifacts: Artifacts & { calibrationPath: string };
  /** The champion against an ancestor of 30 or more days ago (or why not), and the history's change points. */
  drift: DriftRun;
}

/**
 * The A/A protocol and its files, one sequence for the action's calibrate mode and
 * `perf-gate run --aa`: calibration.md (the calibration report) beside the verdict files every
 * run leaves (report.md, analysis.json, chart.svg, result.json).
 */
export async function calibrateAndReport(
  host: BenchmarkHost,
  config: GateConfig,
  o: CalibrationOptions & { outDir: string; champion: string; driftProgress?: Measurement["progress"] },
): Promise<ReportedCalibration> {
  const { outDir, champion, driftProgress, ...options } = o;
  const run = await calibrate(host, config, options);
  // Then main against where it was a month ago, on the same host while it is calibrated.
  const { confirmProgress: _, ...measurement } = options;
  const drift = await measureDrift(host, config, {
    ...measurement,
    runIdPrefix: `${o.runIdPrefix}-drift`,
    progress: driftProgress ?? o.progress,
  });
  const identity = identityNotes(run.analysis, run.documents);
  const report = [
    ...identity,
    calibrationReport(run.calibrations, { champion, history: run.history }),
    driftReport(drift.points, drift.changePoints, drift.skipped),
  ].join("\n\n");
  const artifacts = writeArtifacts(outDir, {
    analysis: run.analysis,
    report: markdownReport(run.analysis, { notes: [...identity, ...run.calibrations.map(calibrationLine)] }),
    documents: run.documents,
  });
  return {
    ...run,
    drift,
    report,
    artifacts: { ...artifacts, calibrationPath: writeCalibrationReport(outDir, report) },
  };
}
