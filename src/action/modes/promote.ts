// mode: promote — main's new HEAD (a push, or a SHA given by hand) becomes the champion on every
// host: deploy it, promote it (each host waits for its running gate and health-checks the build
// first), then verify it there with a short A/A run. A failed check rolls the build back on every
// host that took it, so a pool never splits over a build that failed a check; a host that could
// not be promoted is named, left as it was, and refused for gates until it is promoted
// (docs/design/0026-a-pool-of-hosts.md). mode: rollback — the previous champion, kept on each
// host, becomes the champion again, and is verified the same way.
import { existsSync } from "node:fs";
import * as core from "@actions/core";
import { CouldNotMeasureError, TooFewPairsError } from "../../analysis/unmeasured";
import { configFor, type GateConfig, planRuns } from "../../config/gate-config";
import type { HostStatus } from "../../contract/host";
import { writeArtifacts, writeUnmeasured } from "../../experiment/artifacts";
import { decide } from "../../experiment/decide";
import { poolChampion } from "../../experiment/landing";
import { measure, seedOf } from "../../experiment/measure";
import type { BenchmarkHost } from "../../host/client";
import type { HostPool, Outcome } from "../../host/pool";
import { armsOf } from "../../report/arms";
import { championCheck } from "../../report/calibration";
import { codeBlock, firstLine } from "../../report/format";
import { markdownReport } from "../../report/markdown";
import { quartet } from "../../report/quartet";
import { parsePushToDefaultBranch } from "../event";
import { GitHub } from "../github/client";
import { InputError } from "../inputs";
import { connectPool, hostProgress, type Job, outputDirFor, requireArtifact, sayFor } from "../job";
import { configAt } from "../repo-config";
import { ownerAndRepo, readEvent } from "../runner";

const PROMOTION_CHECK = "perf-gate / champion";

interface Verification {
  passed: boolean;
  unmeasured?: boolean;
  findings: string[];
  text: string;
}

/** What rolling back came to on one host. */
type Rollback =
  | { state: "skipped"; why: string }
  | { state: "rolled"; from: string; after: HostStatus; verification: Verification };

/** What promoting came to on one host. */
type Promotion =
  | { state: "already"; said: string; previous: string }
  | { state: "promoted"; previous: string; verification: Verification };

export async function runPromote(job: Job): Promise<void> {
  const sha = promotedSha(job);
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const check = await gh.startCheck(sha, "perf-gate: promoting to champion", PROMOTION_CHECK, job.runUrl);
  const pool = connectPool(job);
  try {
    const config = await configAt(gh, job.configPath, sha);
    const artifact = requireArtifact(job, existsSync);
    // Each host records the step main takes: the merged pull request's last gate there.
    const merged = await gh.mergedPullRequest(sha).catch((e: Error) => {
      core.warning(
        `perf-gate: which pull request made ${sha.slice(0, 7)} could not be read (${e.message}); each host records the step of the build's own last gate, if any`,
      );
      return null;
    });
    const outcomes = await pool.each(({ name, client }) =>
      promoteOn(client, name, config, job, { sha, artifact, pullRequest: merged ?? undefined }),
    );
    const one = outcomes.length === 1 ? outcomes[0]! : null;
    // One host that could not be promoted: said as it always was (below).
    if (one && !one.ok) throw one.error;
    const verdict = await settlePromotion(pool, job, sha, outcomes);
    await gh.finishCheck(check, verdict.conclusion, verdict.title, verdict.body);
    await core.summary.addRaw(`## perf-gate: ${verdict.title}\n\n${verdict.body}`).write();
    if (verdict.promoted) setChampionOutputs(sha, verdict.previous);
    if (verdict.conclusion === "failure") core.setFailed(`perf-gate: ${verdict.title}: ${verdict.failures.join("; ")}`);
    else core.info(verdict.title);
  } catch (e) {
    // Say what the hosts serve now rather than assume it: the failure may have come anywhere.
    const now = await championsNow(pool);
    await gh
      .finishCheck(
        check,
        "failure",
        "perf-gate: promotion failed",
        `**Promotion of ${sha.slice(0, 7)} failed**; ${now}.\n\n${codeBlock((e as Error).message)}\n`,
      )
      .catch((ghError: Error) => core.warning(`could not report the failure on GitHub: ${ghError.message}`));
    throw e;
  } finally {
    pool.close();
  }
}

/** Deploys, promotes and verifies the build on one host, or says it already is the champion there. */
async function promoteOn(
  host: BenchmarkHost,
  name: string,
  config: GateConfig,
  job: Job,
  { sha, artifact, pullRequest }: { sha: string; artifact: string; pullRequest?: number },
): Promise<Promotion> {
  const say = sayFor(job, name);
  const before = await host.status();
  if (before.champion === sha) {
    // Its config may have changed service: the host restarts the champion on the new spec
    // (health-checked as any promotion), or says nothing changed.
    return {
      state: "already",
      said: await host.promote(sha, config.service, job.busyDeadline),
      previous: before.previous,
    };
  }
  say(await host.deploy("champion", sha, artifact));
  say(await host.promote(sha, config.service, job.busyDeadline, pullRequest));
  return {
    state: "promoted",
    previous: before.champion,
    verification: await verify(host, name, config, job, "promote", sha),
  };
}

interface Settled {
  conclusion: "success" | "failure" | "neutral";
  title: string;
  body: string;
  /** Whether the build is the champion anywhere afterwards, and the champion it replaced. */
  promoted: boolean;
  previous: string;
  failures: string[];
}

/**
 * The promotion as a whole. A failed A/A check on any host rolls the build back on every host
 * that took it; a host that failed otherwise is left as it was and named.
 */
async function settlePromotion(
  pool: HostPool,
  job: Job,
  sha: string,
  outcomes: Outcome<Promotion>[],
): Promise<Settled> {
  const short = sha.slice(0, 7);
  const one = outcomes.length === 1;
  const done = outcomes.flatMap((o) => (o.ok ? [{ name: o.name, ...o.value }] : []));
  const swapped = done.flatMap((d) => (d.state === "promoted" ? [d] : []));
  const previous = swapped[0]?.previous ?? done[0]?.previous ?? "";
  const checks = swapped
    .map((d) => (one ? d.verification.text : `#### ${d.name}\n\n${d.verification.text}`))
    .join("\n\n");
  const failedChecks = swapped.filter((d) => !d.verification.passed);
  if (failedChecks.length > 0) {
    const restored = await pool.each(async ({ name, client }) =>
      swapped.some((d) => d.name === name) ? client.rollback(job.busyDeadline) : null,
    );
    const said = restored.flatMap((r) =>
      r.ok
        ? r.value === null
          ? []
          : [one ? r.value : `${r.name}: ${r.value}`]
        : [`${r.name}: the rollback failed: ${r.error.message}`],
    );
    const title = one
      ? `promotion of ${short} failed its A/A check; rolled back`
      : `promotion of ${short} failed its A/A check on ${names(failedChecks)}; rolled back on ${names(swapped)}`;
    const failures = failedChecks.flatMap((d) => d.verification.findings.map((f) => (one ? f : `${d.name}: ${f}`)));
    return {
      conclusion: "failure",
      title,
      body: `**${title}.** ${said.join("; ")}\n\n${checks}`,
      promoted: false,
      previous,
      failures,
    };
  }
  const unmeasured = swapped.filter((d) => d.verification.unmeasured);
  const failed = outcomes.flatMap((o) => (o.ok ? [] : [{ name: o.name, error: o.error }]));
  if (failed.length === 0) {
    if (swapped.length === 0) {
      const said = done.map((d) => (d.state === "already" ? (one ? d.said : `${d.name}: ${d.said}`) : "")).join("\n");
      return {
        conclusion: "success",
        title: `${short} is already the champion${one ? "" : " on every host"}`,
        body: said,
        promoted: true,
        previous,
        failures: [],
      };
    }
    const where = one ? "" : ` on all ${outcomes.length} hosts`;
    const how =
      unmeasured.length === 0
        ? one
          ? "passed"
          : "passed on each"
        : `could not measure${one ? "" : ` on ${names(unmeasured)}`}`;
    const title = `champion is now ${short}${where} (previous ${orNone(previous)} kept for rollback); A/A check ${how}`;
    // A check the host was too busy to run says nothing against the champion: it stays, and the check says so.
    return {
      conclusion: unmeasured.length > 0 ? "neutral" : "success",
      title,
      body: `**${title}.**\n\n${checks}`,
      promoted: true,
      previous,
      failures: [],
    };
  }
  const serving = await pool.ask((c) => c.status());
  const left = failed.map(({ name, error }) => {
    const s = serving.find((r) => r.name === name);
    const now = s?.ok
      ? `it still serves ${orNone(s.value.champion)} and is refused for gates until it is promoted`
      : "what it serves could not be read; it is refused for gates until it is promoted";
    return `- \`${name}\`: ${firstLine(error)}; ${now} (run this workflow again when it is back).`;
  });
  const title =
    done.length > 0
      ? `champion is now ${short} on ${names(done)}; promotion failed on ${names(failed)}`
      : `promotion of ${short} failed on every host`;
  return {
    conclusion: "failure",
    title,
    body: `**${title}.**\n\n${left.join("\n")}\n\n${checks}`,
    promoted: done.length > 0,
    previous,
    failures: failed.map((f) => `${f.name}: ${firstLine(f.error)}`),
  };
}

export async function runRollback(job: Job): Promise<void> {
  const gh = new GitHub(job.githubToken, ...ownerAndRepo(job.runner), (l) => core.info(l));
  const pool = connectPool(job);
  try {
    // The workloads to verify with come from the workflow's commit; the restored champion
    // runs with the service spec it ran with before.
    const config = await configAt(gh, job.configPath, job.runner.sha);
    const statuses = await pool.ask((c) => c.status());
    const unreachable = statuses.flatMap((s) => (s.ok ? [] : [s]));
    if (pool.size === 1 && unreachable[0]) throw unreachable[0].error;
    // In a pool, the hosts serving the pool's champion are rolled back; a host serving another is left alone.
    const champion =
      poolChampion(statuses.flatMap((s) => (s.ok ? [{ name: s.name, status: s.value }] : [])))?.sha ?? "";
    const outcomes = await pool.each(async ({ name, client }): Promise<Rollback> => {
      const before = statuses.find((s) => s.name === name)!;
      if (!before.ok) throw before.error;
      if (pool.size > 1 && before.value.champion !== champion)
        return {
          state: "skipped",
          why: `it serves ${orNone(before.value.champion)}, not the pool's ${orNone(champion)}: left as it is`,
        };
      sayFor(job, name)(await client.rollback(job.busyDeadline));
      const after = await client.status();
      return {
        state: "rolled",
        from: before.value.champion,
        after,
        verification: await verify(client, name, config, job, "rollback", after.champion),
      };
    });
    if (pool.size === 1 && !outcomes[0]!.ok) throw outcomes[0]!.error;
    const rolled = outcomes.flatMap((o) => (o.ok && o.value.state === "rolled" ? [{ name: o.name, ...o.value }] : []));
    const first = rolled[0];
    const verdictOf = (v: Verification) => (v.unmeasured ? "could not measure" : v.passed ? "passed" : "failed");
    const title = first
      ? `champion is ${orNone(first.after.champion)} again${pool.size > 1 ? ` on ${names(rolled)}` : ""} (rolled back from ${orNone(first.from)}); A/A check ${rolled.map((r) => (pool.size > 1 ? `${r.name} ${verdictOf(r.verification)}` : verdictOf(r.verification))).join(", ")}`
      : "no host was rolled back";
    const others = outcomes.flatMap((o) =>
      !o.ok
        ? [
            `- \`${o.name}\`: ${firstLine(o.error)}; it is left as it was (when it is back, promote the pool's champion there: perf-promote.yml with its sha).`,
          ]
        : o.value.state === "skipped"
          ? [`- \`${o.name}\`: ${o.value.why}.`]
          : [],
    );
    const checks = rolled.map((r) =>
      pool.size > 1 ? `#### ${r.name}\n\n${r.verification.text}` : r.verification.text,
    );
    await core.summary.addRaw(`## perf-gate: ${title}\n\n${[...others, ...checks].join("\n\n")}`).write();
    if (first) setChampionOutputs(first.after.champion, first.after.previous);
    const failures = [
      ...rolled.flatMap((r) => r.verification.findings.map((f) => (pool.size > 1 ? `${r.name}: ${f}` : f))),
      ...outcomes.flatMap((o) => (o.ok ? [] : [`${o.name}: ${firstLine(o.error)}`])),
    ];
    if (failures.length > 0) core.setFailed(`perf-gate: ${title}: ${failures.join("; ")}`);
    else core.info(title);
  } finally {
    pool.close();
  }
}

/** The commit to promote: the sha input, else a push's new HEAD, else the workflow's commit. */
function promotedSha(job: Job): string {
  if (job.sha) return job.sha;
  if (job.runner.eventName === "push") return parsePushToDefaultBranch(readEvent(job.runner));
  if (!/^[0-9a-f]{40}$/.test(job.runner.sha))
    throw new InputError("input sha: give the commit to promote (GITHUB_SHA is not a commit SHA either)");
  return job.runner.sha;
}

/**
 * The short A/A run after a swap: the first workload at its first rate, for the configured
 * number of pairs. A run that fails (the new champion unhealthy or crashing) fails the check.
 */
async function verify(
  host: BenchmarkHost,
  name: string,
  config: GateConfig,
  job: Job,
  verb: string,
  sha: string,
): Promise<Verification> {
  const first = planRuns(config, {}, 0)[0]!;
  const narrowed = configFor(config, first.workload, first.rate);
  const short: GateConfig = { ...narrowed, slices: { ...config.slices, pairs: config.promotion.verify_pairs } };
  const seed = seedOf(sha);
  const outDir = outputDirFor(job, name);
  try {
    const evidence = await measure(host, short, {
      kind: "aa",
      runIdPrefix: `${verb}-${sha.slice(0, 7)}-${job.attempt}`,
      seed,
      busyDeadline: job.busyDeadline,
      pool: false,
      progress: hostProgress(job, name, "A/A check: "),
    });
    const analysis = decide(evidence.results, short, { seed, floors: (await host.status()).floors });
    const on = job.hosts.length > 1 ? name : null;
    writeArtifacts(outDir, {
      analysis,
      report: markdownReport(analysis, { runUrl: job.runUrl, host: on }),
      documents: evidence.documents,
      host: on,
    });
    const { passed, findings, notes } = championCheck(analysis);
    const result = quartet(analysis.headline, analysis.percentile, armsOf(analysis));
    const listed = [...findings, ...notes.map((n) => `Note: ${n}`)];
    return {
      passed,
      findings,
      text: `A/A check, the champion on both ports: ${result}.${listed.length ? `\n\n${listed.map((f) => `- ${f}`).join("\n")}` : ""}`,
    };
  } catch (e) {
    const message = (e as Error).message;
    // Too few valid pairs, both arms serving the new champion: it could not take the rate.
    if (e instanceof CouldNotMeasureError && !(e instanceof TooFewPairsError)) {
      core.warning(
        `perf-gate: the A/A check of ${sha.slice(0, 7)}${job.hosts.length > 1 ? ` on ${name}` : ""} could not measure: ${firstLine(message)}`,
      );
      if (e.explained) writeUnmeasured(outDir, e.explained);
      const what = e.explained?.markdown ?? codeBlock(message);
      return {
        passed: true,
        unmeasured: true,
        findings: [],
        text: `The A/A check could not measure, so it neither passes nor fails the champion:\n\n${what}`,
      };
    }
    return { passed: false, findings: [message], text: `The A/A check could not run:\n\n${codeBlock(message)}` };
  }
}

/** What the hosts serve now, for a promotion that failed before it reached them one by one. */
async function championsNow(pool: HostPool): Promise<string> {
  const now = await pool.ask((c) => c.status());
  if (now.length === 1)
    return now[0]!.ok
      ? `the host's champion is ${orNone(now[0]!.value.champion)}`
      : "the host's champion could not be read";
  return `the hosts' champions: ${now.map((s) => `${s.name} ${s.ok ? orNone(s.value.champion) : "could not be read"}`).join(", ")}`;
}

function setChampionOutputs(champion: string, previous: string): void {
  core.setOutput("champion", champion);
  core.setOutput("previous-champion", previous);
}

const names = (hosts: readonly { name: string }[]) => hosts.map((h) => h.name).join(", ");

function orNone(sha: string): string {
  return sha ? sha.slice(0, 7) : "none";
}
