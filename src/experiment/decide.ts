// decide: the verdict engine on a gate's evidence, with the gate config's SLO and thresholds,
// the job's seed and the host's A/A floors and bias, or the report of why there is none. Pure;
// shared by every mode and the CLI.

import { floorSettings } from "../analysis/floors";
import { CouldNotMeasureError } from "../analysis/unmeasured";
import { type Analysis, analyze, defaultSettings, type GateSettings, type NamedResult } from "../analysis/verdict";
import type { GateConfig } from "../config/gate-config";
import type { StoredFloor } from "../contract/host";
import { unmeasuredReport } from "../report/unmeasured";

export interface Decision {
  seed: number;
  /**
   * The host's latest floors (perf-host status). Left out to judge an A/A run itself: no floor
   * or earlier bias may colour a calibration.
   */
  floors?: Readonly<Record<string, StoredFloor>>;
}

/**
 * The verdict on the results; when the measurement cannot vouch for itself (could not
 * measure), the error carries the report of what was measured, for the gate to write.
 */
export function decide(results: readonly NamedResult[], config: GateConfig, d: Decision): Analysis {
  try {
    return analyze(results, settingsFor(config, d));
  } catch (e) {
    if (e instanceof CouldNotMeasureError) {
      const { markdown, json } = unmeasuredReport(e, results, config.slo.percentile);
      e.explained = { markdown, json, results: results.map((r) => r.result) };
    }
    throw e;
  }
}

/** The verdict engine's settings for a gate config and a decision. */
export function settingsFor(config: GateConfig, d: Decision): GateSettings {
  return {
    ...defaultSettings,
    percentile: config.slo.percentile,
    sloBudgetMs: config.slo.budget_ms,
    blockThresholdPercent: config.block_threshold_percent,
    seed: d.seed,
    ...(config.resources?.block_cpu_percent ? { blockCpuPercent: config.resources.block_cpu_percent } : {}),
    ...(d.floors ? floorSettings(d.floors, config.slo.percentile) : {}),
  };
}
