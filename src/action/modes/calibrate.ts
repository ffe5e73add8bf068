// mode: calibrate — the scheduled A/A protocol on every host: the champion on both ports for
// every workload and rate of the config, each recorded on its host as that host's floor (the
// floor history stays in each host's floors.jsonl; each host is its own instrument). Reports the
// floor, the A/A interval (it must contain 0, or a confirmation run's must) and the drift since
// the last calibration; fails the job when a host is biased, when a floor could not be recorded
// (the host flagged the run, or the load generator fell behind), or when a host could not be
// calibrated at all, naming it; the other hosts' floors are recorded all the same. Each host
// also measures its champion against the champion of a month before (drift), and writes its
// history page (history.html) and history (history.json) beside its report.
import * as core from "@actions/core";
import { biasedCalibrations } from "../../analysis/floors";
import { CouldNotMeasureError } from "../../analysis/unmeasured";
import type { GateConfig } from "../../config/gate-config";
import { writeCalibrationReport, writeHistoryPage, writeUnmeasured } from "../../experiment/artifacts";
import { calibrateAndReport, type ReportedCalibration } from "../../experiment/calibrate";
import { seedOf } from "../../experiment/measure";
import type { BenchmarkHost } from "../../host/client";
import type { Outcome } from "../../host/pool";
import { calibrationLine } from "../../report/calibration";
import { changePointLine, driftLine } from "../../report/drift";
import { codeBlock, firstLine } from "../../report/format";
import { GitHub } from "../github/client";
import { connectPool, hostProgress, type Job, outputDirFor, sayFor } from "../job";
import { configAt } from "../repo-config";
import { ownerAndRepo } from "../runner";

type HostCalibration = ReportedCalibration & { champion: string; page: WrittenHistory | null };

type WrittenHistory = ReturnType<typeof writeHistoryPage>;

export async function runCalibrate(job: Job): Promise<void> {
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const config = await configAt(gh, job.configPath, job.runner.sha);
  const pool = connectPool(job);
  try {
    const outcomes = await pool.each(({ name, client }) => calibrateOn(client, name, config, job));
    await (outcomes.length === 1 ? reportHost(outcomes[0]!, job) : reportPool(outcomes, job));
  } finally {
    pool.close();
  }
}

async function calibrateOn(host: BenchmarkHost, name: string, config: GateConfig, job: Job): Promise<HostCalibration> {
  const { champion } = await host.status();
  const run = await calibrateAndReport(host, config, {
    runIdPrefix: `calibrate-${job.attempt}`,
    seed: seedOf(champion || job.runner.sha),
    busyDeadline: job.busyDeadline,
    progress: hostProgress(job, name, "A/A: "),
    driftProgress: hostProgress(job, name, "drift: "),
    outDir: outputDirFor(job, name),
    champion,
  });
  const say = sayFor(job, name);
  for (const c of run.calibrations) say(calibrationLine(c));
  for (const d of run.drift.points) say(driftLine(d));
  if (run.drift.skipped) say(run.drift.skipped);
  // A change point is main's own drift: said where the job's page shows it, not a failure.
  for (const c of run.drift.changePoints) core.warning(`perf-gate: ${ofHost(job, name)}${changePointLine(c)}`);
  return { ...run, champion, page: await writeHistory(host, name, job) };
}

/** "host-2: " before a line about one host of a pool; nothing for a single host. */
const ofHost = (job: Job, name: string) => (job.hosts.length > 1 ? `${name}: ` : "");

/**
 * The host's history page and document beside its report: the job uploads them, and a Pages
 * workflow can publish the page. A host that cannot give its history is a warning here: the
 * calibration it measured stands.
 */
async function writeHistory(host: BenchmarkHost, name: string, job: Job): Promise<WrittenHistory | null> {
  try {
    const { message, document } = await host.history();
    const source = job.hosts.length > 1 ? `the history of the benchmark host ${name}` : "the benchmark host's history";
    return writeHistoryPage(outputDirFor(job, name), message, document, {
      source,
      repository: ownerAndRepo(job.runner).join("/"),
    });
  } catch (e) {
    core.warning(`perf-gate: ${ofHost(job, name)}the history page was not written: ${(e as Error).message}`);
    return null;
  }
}

/** No floor, but what was measured and why not, in the host's files; the report, or null. */
function writeWhyNot(e: Error, dir: string): { markdown: string; written: ReturnType<typeof writeUnmeasured> } | null {
  if (!(e instanceof CouldNotMeasureError && e.explained)) return null;
  return { markdown: e.explained.markdown, written: writeUnmeasured(dir, e.explained) };
}

/** Why a host's calibration did not do its job (a biased host, floors not recorded), or nothing. */
function failuresOf(run: HostCalibration): string[] {
  const biased = biasedCalibrations(run.calibrations);
  // A calibration that records no floor leaves the host's verdicts on an older one (or none).
  const unrecorded = run.calibrations.filter((c) => c.notRecorded !== null);
  return [
    ...(biased.length > 0 ? [`biased host: ${biased.map(calibrationLine).join("; ")}`] : []),
    ...unrecorded.map(calibrationLine),
  ];
}

/** One host: its report is the job's summary, its files the outputs. */
async function reportHost(o: Outcome<HostCalibration>, job: Job): Promise<void> {
  if (!o.ok) {
    const whyNot = writeWhyNot(o.error, job.outputDir);
    if (whyNot) {
      await core.summary.addRaw(whyNot.markdown).write();
      core.setOutput("report-path", whyNot.written.reportPath);
      core.setOutput("result-path", whyNot.written.resultPath);
    }
    throw o.error;
  }
  const run = o.value;
  await core.summary.addRaw(run.report).write();
  core.setOutput("champion", run.champion);
  core.setOutput("host-biased", String(biasedCalibrations(run.calibrations).length > 0));
  core.setOutput("report-path", run.artifacts.calibrationPath);
  core.setOutput("result-path", run.artifacts.resultPath);
  if (run.page) {
    core.setOutput("history-path", run.page.pagePath);
    core.setOutput("history-json-path", run.page.jsonPath);
  }
  for (const failure of failuresOf(run)) core.setFailed(`perf-gate: ${failure}`);
}

/** A pool: each host's report under its name in one summary (calibration.md), each host's files in a folder of its own. */
async function reportPool(outcomes: Outcome<HostCalibration>[], job: Job): Promise<void> {
  const sections = outcomes.map((o) => {
    if (o.ok) return `## ${o.name}\n\n${o.value.report}`;
    const what = writeWhyNot(o.error, outputDirFor(job, o.name))?.markdown ?? codeBlock(o.error.message);
    return `## ${o.name}\n\n**Not calibrated**: its floors stay as they were.\n\n${what}`;
  });
  const report = sections.join("\n\n");
  await core.summary.addRaw(report).write();
  const done = outcomes.flatMap((o) => (o.ok ? [o.value] : []));
  core.setOutput("champion", done[0]?.champion ?? "");
  core.setOutput("host-biased", String(done.some((r) => biasedCalibrations(r.calibrations).length > 0)));
  core.setOutput("report-path", writeCalibrationReport(job.outputDir, report));
  // Every host's calibration.md, report.md, analysis.json and result.json, in its folder.
  core.setOutput("result-path", job.outputDir);
  const failures = outcomes.flatMap((o) =>
    o.ok ? failuresOf(o.value).map((f) => `${o.name}: ${f}`) : [`${o.name}: not calibrated: ${firstLine(o.error)}`],
  );
  if (failures.length > 0) core.setFailed(`perf-gate: ${failures.join("; ")}`);
}
