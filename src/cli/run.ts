// `perf-gate run`: the whole gate from a terminal, for teams on other CI systems and for the
// demo. It runs against a host over SSH, or (the default) against perf-host on this machine,
// through the same measure and decide as the action: reruns of a build are pooled, and one seed
// drives the load generator and the analysis.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { biasedCalibrations, type Calibration } from "../analysis/floors";
import { CouldNotMeasureError } from "../analysis/unmeasured";
import type { Analysis } from "../analysis/verdict";
import { type GateConfig, parseConfig } from "../config/gate-config";
import { type Artifacts, hostOutDir, writeFailureReport, writeUnmeasured } from "../experiment/artifacts";
import { calibrateAndReport } from "../experiment/calibrate";
import { gate } from "../experiment/gate";
import type { DriftRun } from "../experiment/history";
import { type Progress, seedOf } from "../experiment/measure";
import { onPool } from "../experiment/pool-gate";
import { type BenchmarkHost, HostClient, HostError } from "../host/client";
import { HostPool } from "../host/pool";
import { calibrationLine } from "../report/calibration";
import { changePointLine, driftLine } from "../report/drift";
import { failureWords } from "../report/failure";
import { codeBlock, firstLine } from "../report/format";
import { analysisJson } from "../report/json";
import { verdictLines } from "../report/lines";
import { identityNotes } from "../report/notes";
import { HOST_OPTIONS, hostTarget, readText, type Target } from "./host-flags";
import { parseCommandLine, UsageError } from "./usage";

export const runUsage = `usage: perf-gate run --challenger DIR|TGZ [options]
       perf-gate run --aa [options]
  --config FILE          the gate config (default .github/perf-gate.yml)
  --challenger PATH      the build under test: a release directory or .tar.gz, or a
                         container image (docker save's .tar, an OCI archive or layout)
  --champion PATH        deploy and promote this build as champion first
  --aa                   an A/A run (the champion on both ports); records the floor
  --out DIR              where report.md, chart.svg, analysis.json, result.json go (default
                         perf-gate-out); with --aa calibration.md too
  --json                 print one JSON summary on stdout (progress goes to stderr)
  --local                perf-host on this machine, no SSH (the default); it holds the CPUs
                         awake while measuring (PM QoS; as root, else the report says why
                         not): a sleeping CPU's wake-up stalls the generator
    --root DIR           its state directory (default .perf-gate/host)
    --keep-host          leave the champion serving on exit (by default what this command
                         started is stopped, on Ctrl-C too)
    --perf-host PATH     the perf-host binary (default benchmark-host/bin/perf-host, then PATH)
    --champion-port N    (default 8001)   --challenger-port N   (default 8002)
    --loadgen-cpus LIST  the CPUs the load generator runs on, e.g. 0 or 0-1 (default: any)
    --arm-cpus LIST      the CPUs both builds share, e.g. 1-3 (default: any); as on a host,
                         the two lists must not overlap: the generator needs CPUs of its own
    --max-foreign-cores X  CPU cores other work may take on this machine during a slice
                         before the slice is dropped as disturbed (default 0.25); a run
                         first waits for the machine to be that quiet
    --settle-seconds N   how long it waits (default 30); past it the run is flagged,
                         and --aa records no floor
    --cgroup DIR         (as root) a cgroup v2 directory for each arm's group, as a host's:
                         CPU read per arm, and the arms' CPU profiles (the config's profile)
  --host H[,H…]          a benchmark host over SSH instead, or a pool of them (repeat --host, or
                         separate with commas; H:PORT for a port of its own): the gate runs on
                         a free host, --champion and --aa reach every host
    --port N  --user U  --key FILE  --known-hosts FILE (a line for each host)
  -h, --help             this text
Earlier runs of the same challenger against the same champion on the host are pooled with
this one (a rerun), as in the action; in a pool, the gate goes to the host of those runs.
exit codes: 0 pass, 1 blocking regression (with --aa: a biased host, confirmed by a second run),
2 error: a bad config, a host that could not measure (unreachable, busy, a disturbed load generator),
a workload whose requests mostly fail, or (with --aa) a floor that could not be recorded,
130 interrupted (the run in flight aborted, the local host stopped)`;

export interface RunIo {
  /** Results: the verdict lines, or the --json summary. On a terminal, after a line drawn in place ends. */
  out: (line: string) => void;
  err: (line: string) => void;
  /** Progress that may be redrawn in place (a TTY), or printed line by line. */
  progress: (line: string, done: boolean) => void;
}

interface RunOptions {
  config: string;
  challenger?: string;
  champion?: string;
  aa: boolean;
  out: string;
  json: boolean;
  keepHost: boolean;
  target: Target;
}

/** Ctrl-C (or SIGTERM, SIGHUP, or its output closed) during a run: the run was aborted and the host left as it was found. */
export class Interrupted extends Error {
  override name = "Interrupted";
}

const INTERRUPTS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export async function runCommand(argv: string[], io: RunIo): Promise<number> {
  const o = runOptions(argv);
  if (o === "help") {
    io.out(runUsage);
    return 0;
  }
  // With --json, stdout carries the summary alone.
  const say = o.json ? io.err : io.out;
  const config = parseConfig(readText(o.config, "--config", runUsage), o.config);
  const pool =
    "local" in o.target
      ? HostPool.single("local", new HostClient({ ...o.target.local, log: say }))
      : HostPool.overSsh(o.target.hosts, o.target.login, { log: say });
  // The host whose run is in flight: the one Ctrl-C aborts.
  let current = pool.members[0]!.client;
  const local = localHost(() => current, o, say);
  try {
    await local.begin();
    if (o.champion) await installChampion(pool, config, o.champion, say);
    const progress = (label: string) =>
      local.track(progressBar(label, say, o.json ? (line) => io.err(line) : io.progress));
    const busyDeadline = Date.now(); // a terminal does not queue for a busy host: it says who holds it
    const onHost = (c: BenchmarkHost) => (current = c);
    const dones = o.aa
      ? await calibrateHere(
          pool,
          config,
          o,
          {
            busyDeadline,
            progress: progress("A/A"),
            confirmProgress: progress("A/A confirmation (the interval excluded 0)"),
            driftProgress: progress("drift: the champion against an ancestor"),
          },
          onHost,
        )
      : [await gateHere(pool, config, o, { busyDeadline, progress: progress("champion vs challenger") }, onHost, say)];
    for (const done of dones) if ("analysis" in done) printVerdict(done, say, dones.length > 1);
    if (o.json)
      io.out(
        JSON.stringify(
          dones.length === 1 ? summaryJson(dones[0]!) : { exit_code: exitCodeOf(dones), hosts: dones.map(summaryJson) },
          null,
          2,
        ),
      );
    for (const done of dones)
      if (done.error) io.err(`perf-gate run: ${dones.length > 1 ? `${done.host}: ` : ""}${done.error}`);
    // An A/A run fails on a confirmed bias, not on its own verdict: the two ports run one build.
    return exitCodeOf(dones);
  } catch (e) {
    if (local.interrupted()) throw new Interrupted(`interrupted: ${local.aborted() ?? "no run was going"}`);
    // No verdict, but what was measured and why not: the report says (exit 2 all the same).
    if (e instanceof CouldNotMeasureError && e.explained) {
      const written = writeUnmeasured(o.out, e.explained);
      if (o.json)
        io.out(
          JSON.stringify(
            {
              ...(e.explained.json as object),
              exit_code: 2,
              report: { markdown: written.reportPath, analysis: written.analysisPath, result: written.resultPath },
            },
            null,
            2,
          ),
        );
      say(
        `report: ${relativeOrAbsolute(written.reportPath)} (what was measured, the dropped pairs and why, the arms' log tails; analysis.json and result.json beside it)`,
      );
    } else if (e instanceof HostError && e.runFailure) {
      // A run that failed (an arm crashed, was never healthy, ran out of memory): whose failure
      // it is, and the host's words whole, its arms' log tails (the terminal shows the first line).
      const { said } = failureWords(e, false, o.aa ? null : "the challenger's build (--challenger)");
      const path = writeFailureReport(o.out, `${said}\n\n${codeBlock(e.message)}\n`);
      say(`report: ${relativeOrAbsolute(path)} (what failed and the arms' log tails)`);
    }
    throw e;
  } finally {
    await local.end();
    pool.close();
  }
}

/** The worst of the hosts': an error (2) before a regression or a biased host (1) before a pass. */
function exitCodeOf(dones: readonly Finished[]): number {
  return Math.max(...dones.map((d) => d.exitCode));
}

/**
 * What `run --local` leaves behind: the champion supervisor it started (with the champion) is
 * stopped when the command ends, unless --keep-host; one that was running before is left alone.
 * The first Ctrl-C (or SIGTERM, or SIGHUP: the terminal closed) aborts the run in flight and
 * starts no other; a second one ends the command at once. Output closed under it (piped into
 * `head`) is the same first interrupt: nobody reads the run any more.
 */
function localHost(hostNow: () => BenchmarkHost, o: RunOptions, say: (line: string) => void) {
  const isLocal = "local" in o.target;
  let stopOnExit = false;
  let inFlight: string | undefined;
  let abortedRun: string | undefined;
  let signalled = false;
  const interrupt = () => {
    signalled = true;
    say(`interrupted${inFlight ? `: aborting run ${inFlight}` : ""}`);
    if (inFlight) {
      abortedRun = `run ${inFlight} was aborted`;
      hostNow()
        .abort(inFlight)
        .catch((e) => say(`could not abort run ${inFlight}: ${(e as Error).message}`));
    }
  };
  const onSignal = () => {
    // The listener stays until the command ends: execa's exit handler re-raises a signal that
    // no other listener takes, which would kill the command before it has stopped anything.
    if (signalled) process.exit(130);
    interrupt();
  };
  const onOutputClosed = (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE" && !signalled) interrupt();
  };
  return {
    async begin() {
      for (const signal of INTERRUPTS) process.on(signal, onSignal);
      for (const stream of [process.stdout, process.stderr]) stream.on("error", onOutputClosed);
      stopOnExit = isLocal && !o.keepHost && !(await hostNow().status()).champion_supervised;
    },
    track(p: Progress): Progress {
      return {
        ...p,
        runStart: (run, runId) => {
          if (signalled) throw new Interrupted("interrupted before a run started");
          inFlight = runId;
          p.runStart?.(run, runId);
        },
        runEnd: () => {
          inFlight = undefined;
          p.runEnd?.();
        },
      };
    },
    interrupted: () => signalled,
    aborted: () => abortedRun,
    async end() {
      for (const signal of INTERRUPTS) process.removeListener(signal, onSignal);
      for (const stream of [process.stdout, process.stderr]) stream.removeListener("error", onOutputClosed);
      if (!stopOnExit) return;
      try {
        say(await hostNow().stopChampion());
      } catch (e) {
        say(`could not stop the local host's champion: ${(e as Error).message}`);
      }
    },
  };
}

function runOptions(argv: string[]): RunOptions | "help" {
  const { values: v } = parseCommandLine(
    {
      args: argv,
      options: {
        config: { type: "string", default: ".github/perf-gate.yml" },
        challenger: { type: "string" },
        champion: { type: "string" },
        aa: { type: "boolean", default: false },
        out: { type: "string", default: "perf-gate-out" },
        json: { type: "boolean", default: false },
        "keep-host": { type: "boolean", default: false },
        ...HOST_OPTIONS,
        help: { type: "boolean", short: "h", default: false },
      },
    },
    runUsage,
  );
  if (v.help) return "help";
  if (!v.aa && !v.challenger) throw new UsageError("--challenger is required (or --aa)", runUsage);
  if (v.aa && v.challenger)
    throw new UsageError("--aa measures the champion against itself: it takes no --challenger", runUsage);
  if (v.local && v.host) throw new UsageError("--local and --host exclude each other", runUsage);
  if (v["keep-host"] && v.host)
    throw new UsageError("--keep-host is for a local host; a host over SSH always keeps its champion", runUsage);
  const target = hostTarget(v, runUsage);
  // Before anything reaches a host: a missing challenger found after the champion's promotion
  // left the host changed for nothing.
  for (const flag of ["champion", "challenger"] as const) {
    const build = v[flag];
    if (build === undefined) continue;
    const stat = statSync(build, { throwIfNoEntry: false });
    if (!stat) throw new UsageError(`--${flag}: ${build}: no such build`, runUsage);
    if (stat.isDirectory() && readdirSync(build).length === 0)
      throw new UsageError(`--${flag}: ${build}: an empty directory, not a build`, runUsage);
  }
  return {
    config: v.config,
    challenger: v.challenger,
    champion: v.champion,
    aa: v.aa,
    out: v.out,
    json: v.json,
    keepHost: v["keep-host"],
    target,
  };
}

/**
 * Deploys and promotes a build as the champion on every host where it is not already. A host
 * that fails is named and the others are left promoted; the command then fails.
 */
async function installChampion(
  pool: HostPool,
  config: GateConfig,
  build: string,
  say: (line: string) => void,
): Promise<void> {
  const sha = digestOf(build);
  const outcomes = await pool.each(async ({ client }) => {
    if ((await client.status()).champion === sha) return;
    say(await client.deploy("champion", sha, build));
    say(await client.promote(sha, config.service));
  });
  const failed = outcomes.flatMap((o) => (o.ok ? [] : [o]));
  if (failed.length === 0) return;
  if (pool.size === 1) throw failed[0]!.error;
  const promoted = outcomes.filter((o) => o.ok).map((o) => o.name);
  throw new Error(
    `--champion: promotion failed on ${failed.map((f) => `${f.name} (${firstLine(f.error)})`).join(", ")}; ${promoted.length > 0 ? `promoted on ${promoted.join(", ")}` : "promoted nowhere"}`,
  );
}

/** What a run did: its verdict, and what a terminal and the JSON summary say about it. */
interface Done {
  /** The host that measured it; null for perf-host on this machine. */
  host: string | null;
  analysis: Analysis;
  artifacts: Artifacts;
  notes: string[];
  calibrations: Calibration[] | null;
  /** With --aa: the drift run against an ancestor, or why there was none. */
  drift?: DriftRun;
  pooled: string[];
  exitCode: number;
  /** Why it exits 2 after all (a calibration that recorded no floor), in one line. */
  error?: string;
}

/** A host of a pool that could not do its part (unreachable, no champion): said, exit 2. */
interface NotDone {
  host: string;
  exitCode: 2;
  error: string;
}

type Finished = Done | NotDone;

type Shared = { busyDeadline: number; progress: Progress };

/**
 * The challenger against the champion, on the host of its earlier runs or a free one of the
 * pool, pooled with those runs, judged against that host's floors.
 */
async function gateHere(
  pool: HostPool,
  config: GateConfig,
  o: RunOptions,
  s: Shared,
  onHost: (c: BenchmarkHost) => void,
  say: (line: string) => void,
): Promise<Done> {
  const sha = digestOf(o.challenger!);
  const key = runIdPrefix("run");
  const remote = !("local" in o.target);
  const { value, host } = await onPool(pool, { key, sha, busyDeadline: s.busyDeadline, say }, ({ client }, landing) => {
    onHost(client);
    return gate(client, config, {
      challenger: { sha, artifact: o.challenger },
      runIdPrefix: key,
      seed: seedOf(sha),
      outDir: o.out,
      ...s,
      notes: landing.notes,
      ...(remote ? { host: landing.host } : {}),
    });
  });
  const { analysis, artifacts, notes, evidence } = value;
  return {
    host: remote ? host : null,
    analysis,
    artifacts,
    notes,
    calibrations: null,
    pooled: evidence.pooled,
    exitCode: analysis.blocking ? 1 : 0,
  };
}

/**
 * The A/A protocol on every host in turn: the champion on both ports, each interval recorded as
 * that host's floor. In a pool each host's files go to a folder of its own under --out, and a
 * host that cannot be calibrated is said and exits 2, after the others.
 */
async function calibrateHere(
  pool: HostPool,
  config: GateConfig,
  o: RunOptions,
  s: Shared & { confirmProgress: Progress; driftProgress: Progress },
  onHost: (c: BenchmarkHost) => void,
): Promise<Finished[]> {
  const dones: Finished[] = [];
  for (const { name, client } of pool.members) {
    onHost(client);
    const host = "local" in o.target ? null : name;
    try {
      dones.push(await calibrateOne(client, host, config, hostOutDir(o.out, name, pool.size), s));
    } catch (e) {
      if (pool.size === 1 || e instanceof Interrupted) throw e;
      dones.push({ host: name, exitCode: 2, error: `not calibrated: ${firstLine(e)}` });
    }
  }
  return dones;
}

async function calibrateOne(
  client: BenchmarkHost,
  host: string | null,
  config: GateConfig,
  outDir: string,
  s: Shared & { confirmProgress: Progress; driftProgress: Progress },
): Promise<Done> {
  const { champion } = await client.status();
  if (!champion)
    throw new UsageError(`${host ?? "the host"} has no champion to calibrate: give --champion PATH`, runUsage);
  const run = await calibrateAndReport(client, config, {
    runIdPrefix: runIdPrefix("aa"),
    seed: seedOf(champion),
    outDir,
    champion,
    ...s,
  });
  const drift = run.drift.skipped ? [run.drift.skipped] : run.drift.points.map(driftLine);
  const notes = [
    ...identityNotes(run.analysis, run.documents),
    ...run.calibrations.map(calibrationLine),
    ...drift,
    ...run.drift.changePoints.map(changePointLine),
  ];
  const { artifacts } = run;
  // A calibration that recorded no floor did not do its job (an error); a biased host is exit 1.
  const unrecorded = run.calibrations.filter((c) => c.notRecorded !== null);
  const biased = biasedCalibrations(run.calibrations).length > 0;
  const done: Done = {
    host,
    analysis: run.analysis,
    artifacts,
    notes,
    calibrations: run.calibrations,
    drift: run.drift,
    pooled: [],
    exitCode: unrecorded.length > 0 ? 2 : biased ? 1 : 0,
  };
  if (unrecorded.length > 0)
    done.error = `no floor recorded for ${unrecorded.map((c) => c.key).join(", ")}: ${unrecorded[0]!.notRecorded}`;
  return done;
}

const runIdPrefix = (kind: string) => `${kind}-${Date.now().toString(36)}`;

function printVerdict(d: Done, say: (line: string) => void, named: boolean): void {
  if (named) say(`host ${d.host}:`);
  for (const line of verdictLines(d.analysis)) say(line);
  for (const n of d.notes) say(n.replace(/\*\*/g, ""));
  say(`report: ${relativeOrAbsolute(d.artifacts.reportPath)} (chart.svg, analysis.json and result.json beside it)`);
  const profiles = d.artifacts.profilePaths ?? [];
  if (profiles.length > 0)
    say(`profiles: ${profiles.map(relativeOrAbsolute).join(", ")} (go tool pprof -diff_base CHAMPION CHALLENGER)`);
}

/** run --json: one object a script can act on; the headline's fields are analysis.json's. */
function summaryJson(d: Finished) {
  if (!("analysis" in d)) return { host: d.host, exit_code: d.exitCode, error: d.error };
  const {
    verdict,
    grey_kind,
    blocking,
    blocked_by,
    percentile,
    estimate_ms,
    ci_ms,
    floor_ms,
    threshold_ms,
    pairs,
    headline,
    comparisons,
    preflight_flags,
  } = analysisJson(d.analysis);
  return {
    verdict,
    host: d.host,
    grey_kind,
    blocking,
    blocked_by,
    exit_code: d.exitCode,
    percentile,
    estimate_ms,
    ci_ms,
    confidence: d.analysis.headline.confidence,
    floor_ms,
    threshold_ms,
    pairs,
    headline,
    comparisons: comparisons.map((c) => ({
      key: c.key,
      verdict: c.verdict,
      latency: c.latency,
      blocking: c.blocking,
      estimate_ms: c.estimate_ms,
      ci_ms: c.ci_ms,
      floor_ms: c.floor_ms,
      pairs: c.pairs,
      dropped_pairs: c.dropped_pairs,
      runs: c.runs,
      resources: c.resources,
      budget: c.budget,
    })),
    preflight_flags,
    flags: d.analysis.comparisons.flatMap((c) => c.flags.map((f) => ({ key: c.key, ...f }))),
    pooled: d.pooled,
    calibrations:
      d.calibrations?.map((c) => ({
        key: c.key,
        percentile: c.percentile,
        floor_ms: c.halfWidthMs,
        ci_ms: c.ciMs,
        unbiased: c.unbiased,
        run_id: c.runId,
        previous_floor_ms: c.previous?.half_width_ms ?? null,
        drift_ms: c.driftMs,
        recorded: c.notRecorded === null,
        not_recorded: c.notRecorded,
      })) ?? null,
    drift: d.drift && {
      skipped: d.drift.skipped,
      runs: d.drift.points.map((p) => ({
        ...p.record,
        run_id: p.runId,
        percent: p.percent,
        ci_percent: p.ciPercent,
        steps: p.steps.length,
        steps_percent: p.stepsPercent,
      })),
      change_points: d.drift.changePoints.map((c) => ({
        key: c.key,
        percentile: c.percentile,
        sum_ms: c.sumMs,
        sum_percent: c.sumPercent,
        threshold_ms: c.thresholdMs,
        pull_requests: c.steps.map((x) => x.pullRequest),
        shas: c.steps.map((x) => x.sha),
      })),
    },
    report: {
      markdown: d.artifacts.reportPath,
      chart: d.artifacts.chartPath,
      analysis: d.artifacts.analysisPath,
      result: d.artifacts.resultPath,
      profiles: d.artifacts.profilePaths ?? [],
    },
  };
}

/**
 * Progress: a line as each run starts, and a bar over that run's slices. What the host flagged
 * before measuring is kept on its own line, never drawn over.
 */
function progressBar(
  label: string,
  say: (line: string) => void,
  draw: (line: string, done: boolean) => void,
): Progress {
  let total = 0;
  let done = 0;
  return {
    note: say,
    runStart: ({ workload, rate, request: { loadgen } }) => {
      [total, done] = [2 * loadgen.pairs, 0];
      say(`${label}: ${workload} @ ${rate} req/s, ${loadgen.pairs} pairs of ${loadgen.slice_seconds} s slices`);
    },
    line: (line) => {
      const text = line.replace(/^\d\d:\d\d:\d\d /, "");
      const flagged = /^preflight (\S+): flag: (.*)$/.exec(text);
      if (flagged) return say(`host flagged before measuring: ${flagged[1]}: ${flagged[2]}`);
      if (/ slice \d+\/\d+ /.test(line)) done++;
      draw(`${bar(done, total)} ${text}`, done === total);
    },
  };
}

/** A content digest names a local build, as a commit SHA names a CI build. */
export function digestOf(path: string): string {
  const h = createHash("sha1");
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) {
      for (const e of readdirSync(p).sort()) walk(join(p, e));
    } else {
      h.update(relative(path, p)).update("\0").update(readFileSync(p));
    }
  };
  if (!existsSync(path)) throw new UsageError(`${path}: no such build`, runUsage);
  walk(path);
  return h.digest("hex");
}

function bar(done: number, total: number): string {
  const width = 20;
  const filled = Math.round((width * Math.min(done, total)) / Math.max(1, total));
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`;
}

function relativeOrAbsolute(p: string): string {
  const r = relative(process.cwd(), p);
  return r.startsWith("..") ? p : r;
}
