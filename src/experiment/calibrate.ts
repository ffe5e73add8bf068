// calibrate: the A/A protocol on a host, for every workload and rate of a config. Each
// comparison's interval is stored as the host's floor for its key; one that excludes 0 is
// measured once more first, and the confirmation run is what is stored: an unbiased host
// excludes 0 by chance in 1 run of 20, both of two independent runs in 1 of 400, while a real
// bias persists. A floor is never recorded from a run the host flagged or in which the load
// generator fell behind (the calibration says why). Shared by mode calibrate and
// `perf-gate run --aa`.
import type { Analysis, Comparison } from "../analysis/verdict";
import { type Calibration, calibrations, excludesZero, floorRecord } from "../analysis/floors";
import { configFor, type GateConfig } from "../config/gate-config";
import type { StoredFloor } from "../contract/host";
import type { HostClient } from "../host/client";
import { decide } from "./decide";
import { measure, type Measurement } from "./measure";

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

export async function calibrate(host: HostClient, config: GateConfig, o: CalibrationOptions): Promise<CalibrationRun> {
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
