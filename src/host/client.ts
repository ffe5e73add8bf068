// The benchmark host over OpenSSH: every call is one perf-host verb through the CI key's
// forced command, with the host key pinned. A thin adapter: it moves bytes and classifies
// failures; it decides nothing about performance.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { z } from "zod";
import { resultInconsistency } from "../contract/consistency";
import { type DriftRecord, type GateRecord, type History, parseHistory } from "../contract/history";
import {
  EXIT,
  type FloorRecord,
  floorSchema,
  type HostStatus,
  hostStatusSchema,
  OUTCOME_MARKER,
  type RunSummary,
  runSummarySchema,
  type StoredFloor,
} from "../contract/host";
import type { RunRequest, ServiceSpec } from "../contract/plan";
import { type ErrorKind, type HostResult, hostResultSchema, outcomeSchema, type RunOutcome } from "../contract/result";

/** The largest profile the client takes from a host: a 90 s run's are tens of KiB. */
const MAX_PROFILE_BYTES = 64 << 20;

export type HostErrorKind = "unreachable" | "host_key" | "auth" | "busy" | "refused" | "run_failed" | "protocol";

/**
 * A failure on the way to or on the host: reported as such, never as a performance verdict. A
 * run that failed says why in `runFailure` (the contract's error kind): one that names the
 * challenger is the pull request's build failing, not the host's.
 */
export class HostError extends Error {
  override name = "HostError";
  constructor(
    readonly kind: HostErrorKind,
    message: string,
    readonly runFailure?: ErrorKind,
  ) {
    super(message);
  }

  /** Whether the challenger's own arm failed the run: it crashed, was unhealthy, ran out of memory or disk, or would not stop. */
  get challengersFault(): boolean {
    return this.runFailure?.startsWith("challenger_") ?? false;
  }
}

export interface SshTarget {
  host: string;
  port: number;
  user: string;
  privateKey: string;
  knownHosts: string;
}

/** perf-host on this machine, run directly (local mode): the same verbs, no SSH. */
export interface LocalTarget {
  perfHost: string;
  /** perf-host's configuration flags (--root, ports, --service-user). */
  flags: string[];
}

export type HostOptions = (SshTarget | LocalTarget) & {
  /** Attempts for a call whose connection fails. */
  attempts?: number;
  /** Pause before the first retry, doubled each time. */
  backoffMs?: number;
  /** Pause between attempts on a busy host. */
  busyPollMs?: number;
  log?: (line: string) => void;
};

/**
 * What the action's modes, the gate sequence (src/experiment/) and the CLI ask of a benchmark
 * host: perf-host's verbs, one method each. HostClient speaks them to a real perf-host (over
 * SSH, or on this machine); the modes' tests answer them in memory.
 */
export interface BenchmarkHost {
  deploy(role: "challenger" | "champion", sha: string, artifact: string): Promise<string>;
  promote(sha: string, service: ServiceSpec, busyDeadline?: number, pullRequest?: number): Promise<string>;
  rollback(busyDeadline?: number): Promise<string>;
  abort(runId: string): Promise<void>;
  stopChampion(): Promise<string>;
  recordFloor(runId: string, floor: FloorRecord): Promise<void>;
  recordGate(runId: string, gate: GateRecord): Promise<void>;
  recordDrift(runId: string, drift: DriftRecord): Promise<void>;
  history(): Promise<{ document: unknown; message: History }>;
  floorHistory(): Promise<StoredFloor[]>;
  runsOf(sha: string): Promise<RunSummary[]>;
  start(kind: "run" | "aa", runId: string, request: RunRequest, busyDeadline: number): Promise<void>;
  /** Returns when the run ends, or `signal` aborts (a gate watching the run that holds its host). */
  watch(runId: string, signal: AbortSignal): Promise<void>;
  wait(runId: string, onLine: (line: string) => void): Promise<RunOutcome>;
  result(runId: string): Promise<{ document: unknown; message: HostResult }>;
  /** An arm's CPU profile of a finished run that asked for profiles (pprof, gzipped). */
  profile(runId: string, arm: "champion" | "challenger"): Promise<Uint8Array>;
  status(): Promise<HostStatus>;
  /** A pool's claim on this host's lock: the verbs that take the lock keep it. */
  readonly claim: LockClaim;
  /** Releases what the connection holds (the key on disk). */
  close(): void;
}

/** Opens a host: perf-host over SSH or on this machine (HostClient), or a test's host in memory. */
export type Connect = (options: HostOptions) => BenchmarkHost;

export const connectHostClient: Connect = (options) => new HostClient(options);

/**
 * A pool's claim on a host's lock (docs/design/0026-a-pool-of-hosts.md): a pool's host being
 * landed on, from claimNext until a verb that takes the host's lock next succeeds, reports a busy
 * host at once rather than waiting it out, so that the pool can look for another; and when a
 * verb first took the lock.
 */
export class LockClaim {
  private pending = false;
  private firstAt: number | null = null;

  claimNext(): void {
    this.pending = true;
  }

  /** Whether a claim waits for its first lock. */
  get claiming(): boolean {
    return this.pending;
  }

  /** A verb took the host's lock. */
  took(): void {
    this.pending = false;
    this.firstAt ??= Date.now();
  }

  get lockedAt(): number | null {
    return this.firstAt;
  }
}

/**
 * The clients' directories not yet removed. A step the runner cancels exits from its signal
 * handler (open-checks.ts) without reaching the `finally` that closes its clients, so they go at
 * the process's exit too: a self-hosted runner's next job, running a pull request's code as the
 * same user, finds no key. They live in the job's RUNNER_TEMP, which the runner empties after
 * the job, where there is one (a process killed outright runs no exit handler).
 */
const clientDirs = new Set<string>();
process.once("exit", removeClientDirs);

function removeClientDirs(): void {
  for (const dir of clientDirs) removeClientDir(dir);
}

function makeClientDir(): string {
  const dir = mkdtempSync(join(process.env.RUNNER_TEMP || tmpdir(), "perf-gate-ssh-"));
  clientDirs.add(dir);
  return dir;
}

function removeClientDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  clientDirs.delete(dir);
}

export class HostClient implements BenchmarkHost {
  /** The client's own directory (0700): the key and known_hosts over SSH, a packed artifact; made when first needed. */
  private made: string | null = null;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly log: (line: string) => void;
  private readonly busyPollMs: number;
  readonly claim = new LockClaim();

  constructor(private readonly o: HostOptions) {
    if ("privateKey" in o) {
      writeFileSync(join(this.dir(), "id"), `${o.privateKey.trim()}\n`, { mode: 0o600 });
      writeFileSync(join(this.dir(), "known_hosts"), `${o.knownHosts.trim()}\n`, { mode: 0o600 });
    }
    this.attempts = o.attempts ?? 3;
    this.backoffMs = o.backoffMs ?? 2000;
    this.log = o.log ?? (() => {});
    this.busyPollMs = o.busyPollMs ?? 15_000;
  }

  /** Removes the key from disk. */
  close(): void {
    if (this.made) removeClientDir(this.made);
    this.made = null;
  }

  private dir(): string {
    this.made ??= makeClientDir();
    return this.made;
  }

  /** The program and arguments that run one perf-host command ("verb arg…"). */
  private argv(command: string): [string, string[]] {
    if ("perfHost" in this.o) {
      const [verb, ...args] = command.split(" ");
      return [this.o.perfHost, [verb!, ...this.o.flags, ...args]];
    }
    return ["ssh", this.sshArgs(this.o, command)];
  }

  private sshArgs(o: SshTarget, command: string): string[] {
    return [
      "-i",
      join(this.dir(), "id"),
      "-p",
      String(o.port),
      "-o",
      "BatchMode=yes",
      "-o",
      "IdentitiesOnly=yes",
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      `UserKnownHostsFile=${join(this.dir(), "known_hosts")}`,
      "-o",
      "GlobalKnownHostsFile=/dev/null",
      "-o",
      "ConnectTimeout=15",
      "-o",
      "ServerAliveInterval=15",
      "-o",
      "ServerAliveCountMax=4",
      "-o",
      "LogLevel=ERROR",
      `${o.user}@${o.host}`,
      "--",
      command,
    ];
  }

  /** One call, retried while the connection itself fails (ssh exits 255). */
  private async call(command: string, stdin?: { input?: string; inputFile?: string }) {
    for (let attempt = 1; ; attempt++) {
      const [file, args] = this.argv(command);
      const r = await execa(file, args, { ...stdin, reject: false, stripFinalNewline: false, timeout: 30 * 60_000 });
      // A program that never started (not there, not executable) has no exit status to report.
      if (r.exitCode === undefined && !r.timedOut && "code" in r && typeof r.code === "string")
        throw new HostError("unreachable", `${file}: cannot start it (${r.code})`);
      if (r.exitCode !== 255 || !("host" in this.o)) return r;
      const err = classifySshFailure(String(r.stderr), this.o);
      if (err.kind !== "unreachable" || attempt >= this.attempts) throw err;
      this.log(`ssh ${command.split(" ")[0]}: ${err.message}; retrying (${attempt}/${this.attempts - 1})`);
      await sleep(this.backoffMs * 2 ** (attempt - 1));
    }
  }

  private async must(command: string, stdin?: { input?: string; inputFile?: string }): Promise<string> {
    const r = await this.call(command, stdin);
    if (r.exitCode === 0) return String(r.stdout);
    throw verbError(command, r.exitCode ?? -1, String(r.stderr));
  }

  /** Deploys a build: a directory (packed here: a release, or an OCI layout), a .tar.gz, or an image archive; the host tells them apart by content. */
  async deploy(role: "challenger" | "champion", sha: string, artifact: string): Promise<string> {
    let file = artifact;
    if (statSync(artifact).isDirectory()) {
      file = join(this.dir(), "artifact.tar.gz");
      await execa("tar", ["-czf", file, "-C", artifact, "."]);
    }
    return inertText((await this.must(`deploy ${role} ${sha}`, { inputFile: file })).trim());
  }

  /**
   * Makes a deployed release the champion, with the service spec it runs with. A running
   * experiment is never cut off: the host's lock makes this wait, until `busyDeadline` (an
   * absolute time in ms). `pullRequest`, the pull request merged, lets the host record the
   * step main took: that pull request's last gate (without it, the last gate of the build).
   */
  async promote(sha: string, service: ServiceSpec, busyDeadline = 0, pullRequest?: number): Promise<string> {
    const command = pullRequest === undefined ? `promote ${sha}` : `promote ${sha} ${pullRequest}`;
    return inertText((await this.whenFree(command, busyDeadline, { input: JSON.stringify(service) })).trim());
  }

  /** Makes the previous champion the champion again (waiting for a running experiment). */
  async rollback(busyDeadline = 0): Promise<string> {
    return inertText((await this.whenFree("rollback", busyDeadline)).trim());
  }

  /** Stops a run; its finished slices are kept, marked partial. */
  async abort(runId: string): Promise<void> {
    await this.must(`abort ${runId}`);
  }

  /** Stops the champion supervisor and its champion: `perf-host stop`, which only a local perf-host knows (a CI key's forced command refuses it). */
  async stopChampion(): Promise<string> {
    return (await this.must("stop")).trim();
  }

  /** Records an A/A calibration as the host's floor for a workload and rate. */
  async recordFloor(runId: string, floor: FloorRecord): Promise<void> {
    await this.must(`floor-record ${runId}`, { input: JSON.stringify(floor) });
  }

  /** Keeps a finished gate's verdict in the host's history; `runId` is one of its runs. */
  async recordGate(runId: string, gate: GateRecord): Promise<void> {
    await this.must(`gate-record ${runId}`, { input: JSON.stringify(gate) });
  }

  /** Keeps a drift run's interval (the champion against an ancestor) in the host's history. */
  async recordDrift(runId: string, drift: DriftRecord): Promise<void> {
    await this.must(`drift-record ${runId}`, { input: JSON.stringify(drift) });
  }

  /** The host's history: every gate, promotion, rollback, calibration and drift run, and its ancestors. */
  async history(): Promise<{ document: unknown; message: History }> {
    const text = await this.must("history");
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new HostError("protocol", "history: the host did not answer with JSON");
    }
    try {
      return { document, message: parseHistory("history", document) };
    } catch (e) {
      throw new HostError("protocol", (e as Error).message);
    }
  }

  /** Every floor the host has recorded, oldest first. */
  async floorHistory(): Promise<StoredFloor[]> {
    return this.parsed("floors", z.array(floorSchema));
  }

  /** The finished runs whose challenger was `sha`, oldest first. */
  async runsOf(sha: string): Promise<RunSummary[]> {
    return this.parsed(`runs ${sha}`, z.array(runSummarySchema));
  }

  /** Starts a run (or an A/A run), waiting out a busy host until `busyDeadline`. */
  async start(kind: "run" | "aa", runId: string, request: RunRequest, busyDeadline: number): Promise<void> {
    await this.whenFree(`${kind} ${runId}`, busyDeadline, { input: JSON.stringify(request) });
  }

  /** A verb that takes the host's lock: while the host is busy, retry until `busyDeadline`. */
  private async whenFree(command: string, busyDeadline: number, stdin?: { input?: string }): Promise<string> {
    // A claim looks first: a host another gate took since the pool's look is given up at once,
    // not after the host's lock wait (10 s by default) while another host may be free.
    const taken = this.claim.claiming ? (await this.status()).lock : null;
    if (taken) throw new HostError("busy", `${command}: host busy: ${taken.holder} since ${taken.since}`);
    for (;;) {
      const r = await this.call(command, stdin);
      if (r.exitCode === 0) {
        this.claim.took();
        return String(r.stdout);
      }
      const err = verbError(command, r.exitCode ?? -1, String(r.stderr));
      if (err.kind !== "busy" || this.claim.claiming || Date.now() > busyDeadline) throw err;
      this.log(`${err.message}; waiting`);
      await sleep(this.busyPollMs);
    }
  }

  private async parsed<T>(command: string, schema: z.ZodType<T>): Promise<T> {
    return (await this.document(command, schema)).message;
  }

  /** A verb's answer as sent (for the record) and as the contract's message. */
  private async document<T>(command: string, schema: z.ZodType<T>): Promise<{ document: unknown; message: T }> {
    const text = await this.must(command);
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new HostError("protocol", `${command}: the host did not answer with JSON`);
    }
    const r = schema.safeParse(document);
    if (!r.success) {
      const i = r.error.issues[0]!;
      throw new HostError("protocol", `${command}: unexpected answer at ${i.path.join(".") || "(top)"}: ${i.message}`);
    }
    return { document, message: r.data };
  }

  /**
   * Returns when a run ends, or the connection does, or `signal` aborts: one session that follows
   * the run's log (perf-host wait), for a gate waiting for the host it holds. A session's start
   * costs the host ~0.17 s of CPU here; following costs it next to nothing
   * (docs/design/0026-a-pool-of-hosts.md).
   */
  async watch(runId: string, signal: AbortSignal): Promise<void> {
    const [file, args] = this.argv(`wait ${runId}`);
    await execa(file, args, { reject: false, stdout: "ignore", stderr: "ignore", cancelSignal: signal });
  }

  /**
   * Streams a run's progress until it ends. perf-host replays the log from the start on every
   * wait, so after a dropped connection this reconnects and skips the lines already shown.
   */
  async wait(runId: string, onLine: (line: string) => void, maxReconnects = 20): Promise<RunOutcome> {
    let seen = 0;
    for (let attempt = 0; ; attempt++) {
      const [file, args] = this.argv(`wait ${runId}`);
      const sub = execa(file, args, { reject: false, buffer: { stdout: false, stderr: true } });
      let index = 0;
      let outcome: RunOutcome | null = null;
      for await (const line of sub.iterable({ from: "stdout" })) {
        const text = String(line);
        if (index++ < seen) continue;
        seen++;
        if (text.startsWith(OUTCOME_MARKER))
          outcome = outcomeSchema.parse(JSON.parse(text.slice(OUTCOME_MARKER.length)));
        else onLine(inertLine(text));
      }
      const r = await sub;
      if (outcome) return outcome;
      if (r.exitCode === 255 && "host" in this.o && attempt < maxReconnects) {
        const err = classifySshFailure(String(r.stderr), this.o);
        if (err.kind !== "unreachable") throw err;
        this.log(`the connection dropped while waiting for ${runId}; reconnecting (${attempt + 1}/${maxReconnects})`);
        await sleep(Math.min(this.backoffMs * 2 ** attempt, 30_000));
        continue;
      }
      throw verbError(`wait ${runId}`, r.exitCode ?? -1, String(r.stderr) || "the host ended wait without an outcome");
    }
  }

  /** A finished run's result: the document as the host sent it, and as the contract reads it. */
  async result(runId: string): Promise<{ document: unknown; message: HostResult }> {
    const answer = await this.document(`result ${runId}`, hostResultSchema);
    return { document: answer.document, message: measurable(runId, answer.message) };
  }

  /**
   * An arm's CPU profile of a finished run (pprof, gzipped), as perf-host wrote it when the run
   * request asked for profiles: bytes, checked to be gzip, never a path the host chose.
   */
  async profile(runId: string, arm: "champion" | "challenger"): Promise<Uint8Array> {
    const [file, args] = this.argv(`profile ${runId} ${arm}`);
    const r = await execa(file, args, {
      reject: false,
      encoding: "buffer",
      maxBuffer: MAX_PROFILE_BYTES,
      timeout: 5 * 60_000,
    });
    if (r.exitCode !== 0)
      throw verbError(`profile ${runId} ${arm}`, r.exitCode ?? -1, Buffer.from(r.stderr).toString());
    const bytes = r.stdout;
    if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b)
      throw new HostError("protocol", `profile ${runId} ${arm}: the host did not answer with a gzipped profile`);
    return bytes;
  }

  async status(): Promise<HostStatus> {
    return this.parsed("status", hostStatusSchema);
  }
}

/**
 * A host's result for runId, refused as a protocol error when it describes no run that could
 * have been measured (resultInconsistency): what every BenchmarkHost's result() returns.
 */
export function measurable(runId: string, result: HostResult): HostResult {
  const problem = resultInconsistency(result);
  if (problem) throw new HostError("protocol", `result ${runId}: unexpected answer: ${problem}`);
  return result;
}

/** Classifies ssh's own failures (exit 255) from its stderr. */
export function classifySshFailure(stderr: string, o: Pick<SshTarget, "host" | "port" | "user">): HostError {
  const where = `${o.user}@${o.host}:${o.port}`;
  const first = stderr.trim().split("\n").filter(Boolean).at(-1) ?? "no message";
  if (/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|No .* host key is known/i.test(stderr)) {
    return new HostError(
      "host_key",
      `host key verification failed for ${where}: the known-hosts input does not match the host's key (${first})`,
    );
  }
  if (/Permission denied/i.test(stderr)) {
    return new HostError("auth", `${where} refused the ssh-key input (${first})`);
  }
  return new HostError("unreachable", `cannot reach the benchmark host ${where}: ${first}`);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are what inertLine escapes
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * A line of the host's output as a log may show it. The host relays what a pull request's build
 * printed (its setup's output, its log's tail), so its control characters are shown escaped: a
 * carriage return starts a new line in the runner's log, where `::` begins a workflow command
 * (`::add-mask::`, `::error::`), and escape sequences rewrite a terminal. A line that would itself
 * read as a workflow command is quoted, and the older form (`##[error]`, read anywhere in a
 * line) is broken.
 */
export function inertLine(line: string): string {
  const shown = line
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    // The runner's older command form is read anywhere in a line, not only at its start.
    .replaceAll("##[", "##\\[");
  return /^\s*::/.test(shown) ? `| ${shown}` : shown;
}

/** Each line of the host's text made inert (inertLine); the line breaks stay. */
export function inertText(text: string): string {
  return text.split("\n").map(inertLine).join("\n");
}

/** Maps a perf-host exit code (the contract's) to an error. */
function verbError(command: string, code: number, stderr: string): HostError {
  const said = stderr.trim().replace(/^perf-host: /, "") || `exit ${code}`;
  // perf-host names the verb itself in some messages (deploy challenger SHA: …): once is enough.
  const message = inertText(said.startsWith(`${command}: `) ? said : `${command}: ${said}`);
  switch (code) {
    case EXIT.refused:
      return new HostError("refused", message);
    case EXIT.busy:
      return new HostError("busy", message);
    case EXIT.failed:
      return new HostError("run_failed", message);
    default:
      return new HostError("protocol", message);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
