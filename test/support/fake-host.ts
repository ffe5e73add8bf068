// A benchmark host in memory, for the action's modes tested in-process (test/action/modes.test.ts).
// It answers perf-host's verbs (src/host/client.ts's BenchmarkHost) as a real host does: the
// champion and the predecessors a rollback restores, deploys, the lock, runs and their outcomes,
// floors; every request is validated against the contract's schemas as perf-host validates it,
// and every answer is parsed by them as HostClient parses the host's. Its runs replay a real
// host's result (testdata/README.md): the pairs a run asks for, taken in turn, each arm's
// recorded requests delayed by its build's documented effect. Whether the real parts do what
// this fake says is the end-to-end tests' subject (test/action/*.e2e.test.ts, through a real
// sshd and perf-host); this fake is for the branches the modes take on what a host answers.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { build, encodeIntoCompressedBase64 } from "hdr-histogram-js";
import constants from "../../benchmark-host/contract/schema/constants.json";
import { extractPairs, isDisturbed } from "../../src/analysis/pairs";
import { sliceValuesUs } from "../../src/analysis/statistic";
import {
  type Ancestor,
  type DriftRecord,
  driftRecordSchema,
  type GateRecord,
  gateRecordSchema,
  HISTORY_SCHEMA_VERSION,
  type History,
  type HistoryEntry,
  parseHistory,
} from "../../src/contract/history";
import {
  type FloorRecord,
  floorRecordSchema,
  floorSchema,
  type HostStatus,
  hostStatusSchema,
  type RunSummary,
  runSummarySchema,
  type StoredFloor,
} from "../../src/contract/host";
import { type RunRequest, runRequestSchema, type ServiceSpec } from "../../src/contract/plan";
import {
  type ErrorKind,
  type HostResult,
  hostResultSchema,
  outcomeSchema,
  type RunOutcome,
  type Slice,
} from "../../src/contract/result";
import { floorKey } from "../../src/contract/rules";
import { type BenchmarkHost, HostError, LockClaim, measurable } from "../../src/host/client";

/** The host's recordings a run replays (testdata/README.md), and which of their pairs. */
export const RECORDINGS = {
  /**
   * One build on both arms through sshd: 12 pairs of 1 s slices at 200 req/s, all their
   * differences noise. Its calm pairs are replayed: those in which the load generator kept its
   * schedule (the disturbance rule at p90 keeps them), so that every label is the builds' doing.
   */
  "same-build": { file: "host-result-same-build.json", calmOnly: true },
  /** The same on a host where other work took the CPUs: the host flagged every slice (foreign load). */
  "foreign-load": { file: "host-result-foreign-load.json", calmOnly: false },
} as const;
export type Recording = keyof typeof RECORDINGS;

const recorded = new Map<Recording, { result: HostResult; pairs: number[] }>();
function recording(name: Recording): { result: HostResult; pairs: number[] } {
  let r = recorded.get(name);
  if (!r) {
    const { file, calmOnly } = RECORDINGS[name];
    const result = hostResultSchema.parse(
      JSON.parse(readFileSync(join(import.meta.dirname, "testdata", file), "utf8")),
    );
    const all = [...new Set(result.slices.map((s) => s.pair))];
    const disturbed = new Set(
      extractPairs(file, result, 90)
        .dropped.filter(isDisturbed)
        .map((d) => d.pair),
    );
    r = { result, pairs: calmOnly ? all.filter((p) => !disturbed.has(p)) : all };
    recorded.set(name, r);
  }
  return r;
}

/** How a build behaves on the host. */
export interface FakeBuild {
  /** Added to every request the build serves, in ms (negative: faster than the recording). */
  addedMs?: number;
  /** Its health check never passes, with this last line in its log: promote refuses it; a run fails its arm. */
  unhealthy?: string;
  /** It dies under load: a run with it in an arm fails, `<arm>_crashed`. */
  crashes?: boolean;
}

interface Run {
  kind: "ab" | "aa";
  request: RunRequest;
  outcome: RunOutcome;
  document: unknown;
  summary: RunSummary;
}

const runIdPattern = new RegExp(constants.run_id_pattern);
const digest = (x: unknown) => createHash("sha256").update(JSON.stringify(x)).digest("hex");

export class FakeHost implements BenchmarkHost {
  /** The champion first, then the predecessors a rollback restores, latest first. */
  private reigns: { sha: string; service: ServiceSpec }[] = [];
  private readonly releases = new Set<string>();
  private readonly runs = new Map<string, Run>();
  /** The floors recorded, oldest first. */
  readonly floors: StoredFloor[] = [];
  /** The history's entries, oldest first, and every champion's reign (oldest first) for its ancestors. */
  readonly entries: HistoryEntry[] = [];
  private readonly reignLog: Ancestor[] = [];
  /** A pool's claim: a busy host is said at once, not waited out. */
  readonly claim = new LockClaim();
  /** Pairs of the recording the runs so far replayed: the next run takes the ones after them. */
  private replayed = 0;
  readonly builds = new Map<string, FakeBuild>();
  /** Every verb called, with its first argument: "deploy challenger <sha>", "run <id>", … */
  readonly calls: string[] = [];
  /** The deadline each verb that waits out a busy host was given (ms since the epoch). */
  readonly busyDeadlines: number[] = [];
  /** What each run replays. */
  recording: Recording = "same-build";
  /** Added to every request on the challenger's port, in ms: a host biased between its ports. */
  portBiasMs = 0;
  /** Another job's run holds the lock past every deadline: the verbs that take it fail busy. */
  heldBy: string | null = null;
  /** ssh cannot connect: every verb fails unreachable. */
  unreachable = false;
  /** Why the host refuses every run's plan (a service spec this host cannot run), or null. */
  refusePlan: string | null = null;
  /** Called with each verb as it arrives: a test's moment to change the world (a push lands while a run runs). */
  onVerb: (call: string) => void = () => {};
  /** Connections opened (a job's HostClient) and closed. */
  opened = 0;
  closed = 0;

  /** A host whose champion is `sha` (deployed and promoted, as an operator would). */
  static withChampion(sha: string, service: ServiceSpec = { command: ["./start.sh"] }, since = new Date()): FakeHost {
    const h = new FakeHost();
    h.releases.add(sha);
    h.reigns = [{ sha, service }];
    h.reignLog.push({ sha, since: since.toISOString() });
    h.record("promotion", { change: { sha } }); // as a host records its first champion
    return h;
  }

  get champion(): string {
    return this.reigns[0]?.sha ?? "";
  }

  /** The champion a rollback restores, or "". */
  get previous(): string {
    return this.reigns[1]?.sha ?? "";
  }

  /** The runs started so far, oldest first. */
  runIds(): string[] {
    return [...this.runs.keys()];
  }

  /** Edits a finished run's stored result, as a broken host (or a hand on its disk) would answer it. */
  editResult(runId: string, edit: (document: HostResult) => void): void {
    edit(this.runs.get(runId)!.document as HostResult);
  }

  /** A run's request as the host received it. */
  requestOf(runId: string): RunRequest {
    return this.runs.get(runId)!.request;
  }

  async deploy(role: "challenger" | "champion", sha: string, artifact: string): Promise<string> {
    this.verb(`deploy ${role} ${sha}`);
    statSync(artifact); // HostClient reads it before it connects
    this.releases.add(sha);
    return `deployed ${role} ${sha}`;
  }

  async promote(sha: string, service: ServiceSpec, busyDeadline = 0, pullRequest?: number): Promise<string> {
    this.locked(`promote ${sha}`, busyDeadline);
    if (!this.releases.has(sha))
      throw new HostError(
        "run_failed",
        `promote ${sha}: release ${sha} is not deployed (deploy champion ${sha} first)`,
      );
    const unhealthy = this.builds.get(sha)?.unhealthy;
    if (unhealthy !== undefined) {
      const kept = this.champion ? `champion ${this.champion} unchanged` : "no champion yet";
      throw new HostError(
        "run_failed",
        `promote ${sha}: promotion refused (${kept}): candidate champion ${sha} not healthy after 30s at http://127.0.0.1:8002/health; its log ends: ${unhealthy}`,
      );
    }
    if (sha === this.champion) {
      const same = digest(service) === digest(this.reigns[0]!.service);
      this.reigns[0] = { sha, service };
      return same
        ? `${sha} is already the champion`
        : `${sha} is already the champion; it serves with the new service spec now`;
    }
    const previous = this.champion;
    this.reigns.unshift({ sha, service });
    this.reign(sha);
    // The step main took: the pull request's last gate on this host, else the build's own.
    const step = this.entries.findLast(
      (e) =>
        e.gate && (pullRequest === undefined ? e.gate.challenger_sha === sha : e.gate.pull_request === pullRequest),
    );
    this.record("promotion", {
      change: {
        sha,
        ...(previous ? { previous } : {}),
        ...(pullRequest !== undefined ? { pull_request: pullRequest } : {}),
        ...(step?.gate ? { step: { gated: step.time, gate: step.gate } } : {}),
      },
    });
    return `champion is now ${sha} (previous ${previous || "none"}); ${step?.gate ? `its step is the gate of ${sha} recorded ${step.time} (${step.gate.verdict})` : "no gate of it on this host: its step counts 0"}`;
  }

  async rollback(busyDeadline = 0): Promise<string> {
    this.locked("rollback", busyDeadline);
    if (this.reigns.length < 2) throw new HostError("run_failed", "rollback: rollback: there is no previous champion");
    const was = this.reigns.shift()!.sha;
    this.reign(this.champion);
    this.record("rollback", { change: { sha: this.champion, previous: was } });
    return `champion is ${this.champion} again (was ${was}; previous ${this.reigns[1]?.sha ?? "none"})`;
  }

  async abort(runId: string): Promise<void> {
    this.verb(`abort ${runId}`);
  }

  async stopChampion(): Promise<string> {
    this.verb("stop");
    throw new HostError("refused", "stop: the CI key's forced command refuses stop (a local perf-host verb)");
  }

  async recordFloor(runId: string, floor: FloorRecord): Promise<void> {
    this.verb(`floor-record ${runId}`);
    const run = this.runs.get(runId);
    const parsed = floorRecordSchema.safeParse(floor);
    if (!parsed.success) throw new HostError("refused", `floor-record ${runId}: ${parsed.error.issues[0]!.message}`);
    if (run?.kind !== "aa" || run.outcome.status !== "ok")
      throw new HostError("refused", `floor-record ${runId}: not a finished A/A run`);
    this.floors.push(floorSchema.parse({ ...parsed.data, run_id: runId, time: new Date().toISOString() }));
    this.record("calibration", { run_id: runId, calibration: parsed.data });
  }

  async recordGate(runId: string, gate: GateRecord): Promise<void> {
    this.verb(`gate-record ${runId}`);
    const g = this.recordable("gate", runId, gateRecordSchema.safeParse(gate));
    const run = this.runs.get(runId)!.summary;
    if (
      run.kind !== "ab" ||
      run.status !== "ok" ||
      run.challenger_sha !== g.challenger_sha ||
      run.champion_sha !== g.champion_sha ||
      !g.runs.includes(runId)
    ) {
      throw new HostError(
        "refused",
        `gate-record ${runId}: gate: run ${runId} measured ${run.challenger_sha} against ${run.champion_sha}, not what the record says`,
      );
    }
    this.record("gate", { run_id: runId, gate: g });
  }

  async recordDrift(runId: string, drift: DriftRecord): Promise<void> {
    this.verb(`drift-record ${runId}`);
    const d = this.recordable("drift", runId, driftRecordSchema.safeParse(drift));
    const run = this.runs.get(runId)!;
    if (
      run.request.ancestor_sha !== d.ancestor_sha ||
      run.summary.challenger_sha !== d.champion_sha ||
      run.outcome.status !== "ok"
    ) {
      throw new HostError(
        "refused",
        `drift-record ${runId}: drift: run ${runId} measured ${run.summary.challenger_sha} against ${run.summary.champion_sha}, not champion ${d.champion_sha} against ancestor ${d.ancestor_sha}`,
      );
    }
    this.record("drift", { run_id: runId, drift: d });
  }

  async history(): Promise<{ document: unknown; message: History }> {
    this.verb("history");
    const document = structuredClone({
      schema_version: HISTORY_SCHEMA_VERSION,
      time: new Date().toISOString(),
      champion: this.champion,
      ancestors: [...this.reignLog].reverse(),
      entries: this.entries,
      bound_bytes: 4 << 20,
      dropped: 0,
    });
    return { document, message: parseHistory("history", document) };
  }

  /** A record the history keeps from a run: valid as the contract says, of a run of this host, and not kept before. */
  private recordable<T>(
    kind: "gate" | "drift",
    runId: string,
    parsed:
      | { success: true; data: T }
      | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } },
  ): T {
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw new HostError("refused", `${kind}-record ${runId}: ${kind}: ${i.path.join(".")}: ${i.message}`);
    }
    if (!this.runs.has(runId))
      throw new HostError("refused", `${kind}-record ${runId}: ${kind}: run ${runId}: no run of that id on this host`);
    if (this.entries.some((e) => e.kind === kind && e.run_id === runId))
      throw new HostError("refused", `${kind}-record ${runId}: ${kind}: run ${runId} is already recorded`);
    return parsed.data;
  }

  private record(kind: HistoryEntry["kind"], entry: Omit<HistoryEntry, "schema_version" | "kind" | "time">): void {
    this.entries.push({ schema_version: HISTORY_SCHEMA_VERSION, kind, time: new Date().toISOString(), ...entry });
  }

  /** A new reign begins now (a promotion, a rollback): the one before ends. */
  private reign(sha: string): void {
    const now = new Date().toISOString();
    const last = this.reignLog.at(-1);
    if (last) last.until = now;
    this.reignLog.push({ sha, since: now });
  }

  async floorHistory(): Promise<StoredFloor[]> {
    this.verb("floors");
    return [...this.floors];
  }

  async runsOf(sha: string): Promise<RunSummary[]> {
    this.verb(`runs ${sha}`);
    return [...this.runs.values()]
      .filter((r) => r.summary.challenger_sha === sha)
      .map((r) => runSummarySchema.parse(r.summary));
  }

  async start(kind: "run" | "aa", runId: string, request: RunRequest, busyDeadline: number): Promise<void> {
    this.locked(`${kind} ${runId}`, busyDeadline);
    const refuse = (why: string) => new HostError("refused", `${kind} ${runId}: ${why}`);
    if (!runIdPattern.test(runId) || this.runs.has(runId))
      throw refuse(`run id ${runId}: not a new id of ${constants.run_id_pattern}`);
    const parsed = runRequestSchema.safeParse(request);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw refuse(`plan: ${i.path.join(".")}: ${i.message}`);
    }
    if (this.refusePlan) throw refuse(this.refusePlan);
    if (!this.champion) throw refuse("no champion: deploy a release and promote it first");
    const challenger = kind === "aa" ? this.champion : request.challenger_sha;
    if (!challenger) throw refuse("plan: challenger_sha: required for a run");
    for (const [field, sha] of [
      ["challenger_sha", challenger],
      ["merge_base_sha", request.merge_base_sha],
    ] as const) {
      if (sha && !this.releases.has(sha))
        throw refuse(`plan: ${field}: release "${sha}" is not deployed (deploy ${field.split("_")[0]} SHA first)`);
    }
    // A drift run's ancestor must be a champion this host kept.
    if (request.ancestor_sha && !this.reignLog.some((r) => r.sha === request.ancestor_sha)) {
      throw refuse(`plan: ancestor_sha: ${request.ancestor_sha} is not an ancestor this host keeps`);
    }
    const champion = request.merge_base_sha ?? request.ancestor_sha ?? this.champion;
    const base = request.merge_base_sha ? "merge-base" : request.ancestor_sha ? "ancestor" : "champion";
    const builds = {
      kind: kind === "aa" ? "aa" : "ab",
      champion_sha: champion,
      challenger_sha: challenger,
      base,
    } as const;
    const started = new Date().toISOString();
    const failure = this.failure(builds.champion_sha, builds.challenger_sha);
    const outcome = outcomeSchema.parse({
      run_id: runId,
      kind: builds.kind,
      status: failure ? "error" : "ok",
      ...failure,
      started,
      ended: new Date().toISOString(),
    });
    const document = failure ? null : this.replay(runId, parsed.data, builds);
    const summary = {
      run_id: runId,
      kind: builds.kind,
      status: outcome.status,
      champion_sha: champion,
      challenger_sha: challenger,
      workload: request.loadgen.workload ?? "default",
      rate: request.loadgen.rate,
      started,
      ended: outcome.ended,
    };
    this.runs.set(runId, { kind: builds.kind, request, outcome, document, summary });
  }

  /** A run here ends when it starts: there is nothing to wait for. */
  async watch(runId: string, _signal: AbortSignal): Promise<void> {
    this.known(`wait ${runId}`, runId);
  }

  async wait(runId: string, onLine: (line: string) => void): Promise<RunOutcome> {
    const run = this.known(`wait ${runId}`, runId);
    const slices = (run.document as HostResult | null)?.slices ?? [];
    for (const s of slices)
      onLine(`slice ${s.index + 1}/${slices.length} ${s.arm} p90=${(s.latency_us.p90 / 1000).toFixed(3)}ms`);
    return run.outcome;
  }

  async result(runId: string): Promise<{ document: unknown; message: HostResult }> {
    const run = this.known(`result ${runId}`, runId);
    if (!run.document) throw new HostError("run_failed", `result ${runId}: the run failed: ${run.outcome.message}`);
    const document = structuredClone(run.document);
    // As the host client does: a replay that no run could have measured is refused.
    return { document, message: measurable(runId, hostResultSchema.parse(document)) };
  }

  async profile(runId: string, arm: "champion" | "challenger"): Promise<Uint8Array> {
    this.known(`profile ${runId} ${arm}`, runId);
    // The recordings were made without profiles, so their results list none to fetch.
    throw new HostError(
      "refused",
      `profile ${runId} ${arm}: run ${runId} kept no profiles (its request did not ask for them)`,
    );
  }

  async status(): Promise<HostStatus> {
    this.verb("status");
    const latest: Record<string, StoredFloor> = {};
    for (const f of this.floors) latest[floorKey(f.workload, f.rate, f.percentile)] = f;
    return hostStatusSchema.parse({
      perf_host_version: "fake",
      champion: this.champion,
      previous: this.previous,
      champion_supervised: this.champion !== "",
      lock: this.heldBy ? { holder: this.heldBy, pid: 1, since: new Date().toISOString(), age_seconds: 1 } : null,
      floors: latest,
      disk_free_bytes: 50e9,
      memory_available_bytes: 8e9,
      load_avg: [0.1, 0.1, 0.1],
      releases: [...this.releases],
      ports: { champion: 8001, challenger: 8002 },
    });
  }

  /** A job's connection to this host (what a Connect gives the modes). */
  connect(): BenchmarkHost {
    this.opened++;
    return this;
  }

  close(): void {
    this.closed++;
  }

  private verb(call: string): void {
    if (this.opened === this.closed)
      throw new Error(`${call}: no open connection to the host (connect() first; close() ends one)`);
    this.calls.push(call);
    this.onVerb(call);
    if (this.unreachable)
      throw new HostError(
        "unreachable",
        "cannot reach the benchmark host perf-gate-ci@203.0.113.7:22: ssh: connect to host 203.0.113.7 port 22: Connection timed out",
      );
  }

  /** A verb that takes the host's lock: HostClient waits out a busy host until the deadline, and this one's never frees. */
  private locked(call: string, busyDeadline: number): void {
    this.verb(call);
    this.busyDeadlines.push(busyDeadline);
    if (!this.heldBy) this.claim.took();
    if (this.heldBy)
      throw new HostError("busy", `${call}: host busy: ${this.heldBy} since ${new Date().toISOString()} (1s ago)`);
  }

  private known(call: string, runId: string): Run {
    this.verb(call);
    const run = this.runs.get(runId);
    if (!run) throw new HostError("refused", `${call}: no run ${runId}`);
    return run;
  }

  /** How a run of these builds fails, if it does: the champion arm's build first, as the host checks both. */
  private failure(champion: string, challenger: string): { error_kind: ErrorKind; message: string } | null {
    for (const [arm, sha] of [
      ["champion", champion],
      ["challenger", challenger],
    ] as const) {
      const b = this.builds.get(sha) ?? {};
      if (b.unhealthy !== undefined)
        return {
          error_kind: `${arm}_unhealthy`,
          message: `${arm} ${sha} not healthy after 30s; its log ends: ${b.unhealthy}`,
        };
      if (b.crashes)
        return { error_kind: `${arm}_crashed`, message: `${arm} ${sha} exited with status 2 during slice 3` };
    }
    return null;
  }

  /**
   * The recording as this run's result: the pairs it asked for, the next ones of the recording
   * in turn (wrapping), renumbered; its plan, builds and identity; each arm's requests delayed
   * by its build's effect (and the challenger's port by the host's bias).
   */
  private replay(
    runId: string,
    request: ReturnType<typeof runRequestSchema.parse>,
    builds: { kind: "ab" | "aa"; champion_sha: string; challenger_sha: string; base: string },
  ): unknown {
    const { result, pairs } = recording(this.recording);
    const r = structuredClone(result);
    const plan = request.loadgen;
    if (plan.rate !== r.plan.rate || plan.slice_seconds !== r.plan.slice_seconds) {
      throw new Error(
        `the fake host replays runs of ${r.plan.rate} req/s in ${r.plan.slice_seconds} s slices; the config asked for ${plan.rate} req/s in ${plan.slice_seconds} s slices`,
      );
    }
    const first = this.replayed;
    this.replayed += plan.pairs;
    const addedUs = (arm: Slice["arm"]) =>
      1000 *
      ((this.builds.get(arm === "champion" ? builds.champion_sha : builds.challenger_sha)?.addedMs ?? 0) +
        (arm === "challenger" ? this.portBiasMs : 0));
    const slices = Array.from({ length: plan.pairs }, (_, pair) =>
      r.slices.filter((s) => s.pair === pairs[(first + pair) % pairs.length]).map((s) => ({ ...s, pair })),
    ).flat();
    slices.forEach((s, index) => {
      s.index = index;
      delayed(s, addedUs(s.arm));
    });
    const service = digest(request.service);
    const generator = digest({ ...plan, run_id: undefined, seed: undefined, pairs: undefined });
    const arm = (sha: string, spec: string) => ({ sha, build: `sha256:${digest(sha)}`, service: spec });
    const identity = {
      champion: arm(builds.champion_sha, service),
      challenger: arm(builds.challenger_sha, service),
      placement: r.identity!.placement,
      generator,
    };
    return {
      ...r,
      plan: { ...r.plan, ...plan, run_id: runId, builds, targets: r.plan.targets },
      order: slices.map((s) => s.arm),
      slices,
      outcome: { run_id: runId, kind: builds.kind, status: "ok", started: r.started, ended: r.ended },
      arms: {
        champion: { ...r.arms!.champion!, sha: builds.champion_sha },
        challenger: { ...r.arms!.challenger!, sha: builds.challenger_sha },
      },
      identity: { digest: digest(identity), ...identity },
    };
  }
}

/** Every request the slice recorded, `us` later (a slower build): its histogram and named percentiles. */
function delayed(s: Slice, us: number): void {
  if (us === 0) return;
  const h = build({ numberOfSignificantValueDigits: 3, useWebAssembly: false });
  for (const v of sliceValuesUs(s)) h.recordValue(Math.max(1, Math.round(v + us)));
  s.histogram = encodeIntoCompressedBase64(h);
  s.latency_us = {
    p50: h.getValueAtPercentile(50),
    p90: h.getValueAtPercentile(90),
    p99: h.getValueAtPercentile(99),
    p999: h.getValueAtPercentile(99.9),
    max: h.maxValue,
  };
}
