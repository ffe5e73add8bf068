// mode: calibrate — the scheduled A/A protocol: the champion on both ports for every workload
// and rate of the config, each recorded on the host as its floor (the floor history stays in
// the host's floors.jsonl). Reports the floor, the A/A interval (it must contain 0, or a
// confirmation run's must) and the drift since the last calibration; fails the job when the
// host is biased, or when a floor could not be recorded (the host flagged the run, or the load
// generator fell behind).
import * as core from "@actions/core";
import { CouldNotMeasureError } from "../../analysis/unmeasured";
import { biasedCalibrations } from "../../analysis/floors";
import { calibrationLine } from "../../report/calibration";
import { changePointLine, driftLine } from "../../report/drift";
import { writeUnmeasured } from "../../experiment/artifacts";
import { calibrateAndReport } from "../../experiment/calibrate";
import { writeHistoryPage } from "../../experiment/artifacts";
import { seedOf } from "../../experiment/measure";
import { GitHub } from "../github/client";
import type { HostClient } from "../../host/client";
import { connectHost, type Job, logProgress } from "../job";
import { configAt } from "../repo-config";
import { ownerAndRepo } from "../runner";

export async function runCalibrate(job: Job): Promise<void> {
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const config = await configAt(gh, job.configPath, job.runner.sha);
  const host = connectHost(job);
  try {
    const { champion } = await host.status();
    const run = await calibrateAndReport(host, config, {
      runIdPrefix: `calibrate-${job.attempt}`,
      seed: seedOf(champion || job.runner.sha),
      busyDeadline: job.busyDeadline,
      progress: logProgress("A/A: "),
      driftProgress: logProgress("drift: "),
      outDir: job.outputDir,
      champion,
    });
    await core.summary.addRaw(run.report).write();
    for (const c of run.calibrations) core.info(calibrationLine(c));
    for (const d of run.drift.points) core.info(driftLine(d));
    if (run.drift.skipped) core.info(run.drift.skipped);
    // A change point is main's own drift: said where the job's page shows it, not a failure.
    for (const c of run.drift.changePoints) core.warning(`perf-gate: ${changePointLine(c)}`);
    const biased = biasedCalibrations(run.calibrations);
    const unrecorded = run.calibrations.filter((c) => c.notRecorded !== null);
    core.setOutput("champion", champion);
    core.setOutput("host-biased", String(biased.length > 0));
    core.setOutput("report-path", run.artifacts.calibrationPath);
    core.setOutput("result-path", run.artifacts.resultPath);
    await writeHistory(host, job);
    if (biased.length > 0) core.setFailed(`perf-gate: biased host: ${biased.map(calibrationLine).join("; ")}`);
    // A calibration that records no floor leaves the host's verdicts on an older one (or none).
    if (unrecorded.length > 0) core.setFailed(`perf-gate: ${unrecorded.map(calibrationLine).join("; ")}`);
  } catch (e) {
    // No floor, but what was measured and why not, in the job's summary and artifacts.
    if (e instanceof CouldNotMeasureError && e.explained) {
      const written = writeUnmeasured(job.outputDir, e.explained);
      await core.summary.addRaw(e.explained.markdown).write();
      core.setOutput("report-path", written.reportPath);
      core.setOutput("result-path", written.resultPath);
    }
    throw e;
  } finally {
    host.close();
  }
}

/**
 * The history page and document beside the calibration's report: the job uploads them, and a
 * Pages workflow can publish the page. A host that cannot give its history is a warning here:
 * the calibration it measured stands.
 */
async function writeHistory(host: HostClient, job: Job): Promise<void> {
  try {
    const { message, document } = await host.history();
    const written = writeHistoryPage(job.outputDir, message, document, { source: "the benchmark host's history", repository: ownerAndRepo(job.runner).join("/") });
    core.setOutput("history-path", written.pagePath);
    core.setOutput("history-json-path", written.jsonPath);
  } catch (e) {
    core.warning(`perf-gate: the history page was not written: ${(e as Error).message}`);
  }
}
