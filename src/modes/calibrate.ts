// mode: calibrate — the scheduled A/A protocol: the champion on both ports for every workload
// and rate of the config, each recorded on the host as its floor (the floor history stays in
// the host's floors.jsonl). Reports the floor, the A/A interval (it must contain 0, or a
// confirmation run's must) and the drift since the last calibration; fails the job when the
// host is biased.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { analyze } from "../analysis/verdict";
import { calibrationLine, calibrationReport } from "../calibration";
import { gateSettings, recordCalibrations, runExperiments, seedOf } from "../experiment";
import { GitHub } from "../github/client";
import type { Inputs } from "../inputs";
import { configAt } from "../repo-config";
import { busyDeadline, connectHost, outputDir, ownerAndRepo, type RunnerEnv } from "../runner";

export async function runCalibrate(inputs: Inputs, env: RunnerEnv): Promise<void> {
  const gh = new GitHub(inputs["github-token"], ...ownerAndRepo(env), (l) => core.info(l));
  const config = await configAt(gh, inputs.config, env.sha);
  const host = connectHost(inputs);
  try {
    const { champion } = await host.status();
    const seed = seedOf(champion || env.sha);
    const options = {
      runIdPrefix: `calibrate-${env.runId}-${env.runAttempt}`,
      seed,
      busyDeadline: busyDeadline(inputs),
      onLine: (line: string) => core.info(line),
      onRunStart: (w: string, rate: number, runId: string) => core.startGroup(`A/A: ${w} @ ${rate} req/s (run ${runId})`),
      onRunEnd: () => core.endGroup(),
    };
    const experiments = await runExperiments(host, config, { ...options, kind: "aa" });
    // The raw A/A intervals: no floor or earlier bias may colour the calibration itself.
    const analysis = analyze(experiments.results, gateSettings(config, seed));
    const { calibrations, history, confirmations } = await recordCalibrations(host, config, analysis.comparisons, options);
    const report = calibrationReport(calibrations, { champion, percentile: config.slo.percentile, history });
    const dir = outputDir(inputs, env);
    writeFileSync(join(dir, "calibration.md"), report);
    writeFileSync(join(dir, "result.json"), JSON.stringify([...experiments.documents, ...confirmations.documents], null, 2));
    await core.summary.addRaw(report).write();
    for (const c of calibrations) core.info(calibrationLine(c));
    const biased = calibrations.filter((c) => !c.unbiased);
    core.setOutput("champion", champion);
    core.setOutput("host-biased", String(biased.length > 0));
    core.setOutput("report-path", join(dir, "calibration.md"));
    core.setOutput("result-path", join(dir, "result.json"));
    if (biased.length > 0) core.setFailed(`perf-gate: biased host: ${biased.map(calibrationLine).join("; ")}`);
  } finally {
    host.close();
  }
}
