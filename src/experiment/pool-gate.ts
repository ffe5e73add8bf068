// A gate on a pool of hosts: find the host it goes to (src/experiment/landing.ts decides), run
// the gate there, and when another gate took that host between the look and the run, look
// again; while the hosts it may take are busy, watch the runs holding them. GitHub Actions runs
// the jobs; the hosts' own locks are the only queue (docs/design/0026-a-pool-of-hosts.md). A pool
// of one host is used as it always was: the gate waits for its lock.
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchmarkHost } from "../host/client";
import { HostError } from "../host/client";
import type { HostPool, PoolMember } from "../host/pool";
import { type Choice, chooseHost, type HostSurvey, type Standing, standingLine } from "./landing";

export interface PoolGateOptions {
  /** The gate's own key (its run id prefix): the order in which it tries free hosts. */
  key: string;
  /** The build to measure: the host of its earlier runs is preferred (and waited for). */
  sha?: string;
  /** comparison_base merge-base: the merge base's SHA, whose runs against the build pool too. */
  mergeBase?: string;
  /** When to stop waiting for a free host (ms since the epoch). */
  busyDeadline: number;
  /** Pause before looking again at a host held by something other than a run (a promotion, gc). */
  pollMs?: number;
  say: (line: string) => void;
}

export interface Landing {
  /** The host the gate runs on. */
  host: string;
  /**
   * Lines for the report: where it ran, how long it waited for the host (from its first look
   * until its first run took the host's lock), and what the other hosts were doing. Ask once the
   * gate has measured.
   */
  notes: () => string[];
}

export type Landed<T> = { host: string; value: T; waitedMs: number };

/** Runs `work` on the host a gate lands on: the host of the build's earlier runs, else a free one. */
export async function onPool<T>(
  pool: HostPool,
  o: PoolGateOptions,
  work: (member: PoolMember, landing: Landing) => Promise<T>,
): Promise<Landed<T>> {
  if (pool.size === 1) {
    const only = pool.members[0]!;
    return { host: only.name, value: await work(only, { host: only.name, notes: () => [] }), waitedMs: 0 };
  }
  const pollMs = o.pollMs ?? 15_000;
  const started = Date.now();
  // Earlier runs are asked for once: the evidence a rerun pools with does not move while it waits.
  const runs = o.sha ? await earlierRuns(pool, o.sha) : new Map<string, HostSurvey["runs"]>();
  let said = "";
  let saidWaiting = false;
  const unwatchable = new Set<string>();
  for (;;) {
    const choice = chooseHost(await survey(pool, runs), {
      key: o.key,
      ...(o.mergeBase ? { mergeBase: o.mergeBase } : {}),
    });
    const seen = choice.standings.map(standingLine).join("; ");
    if (seen !== said) o.say(`pool: ${seen}`);
    said = seen;
    const held = (name: string) => choice.standings.find((s) => s.name === name)?.state === "busy";
    if (choice.host && !(choice.stay && held(choice.host))) {
      const member = pool.member(choice.host);
      if (!choice.stay) member.client.claim.claimNext();
      o.say(
        choice.stay
          ? `pool: ${choice.host} holds the earlier runs of ${o.sha?.slice(0, 7)}: measuring there, waiting for it while it is busy`
          : `pool: ${choice.host} is free: measuring there`,
      );
      const unasked = o.sha ? pool.members.map((m) => m.name).filter((n) => !runs.has(n)) : [];
      const waited = () => (member.client.claim.lockedAt ?? Date.now()) - started;
      const landing = { host: choice.host, notes: () => landingNotes(choice, pool.size, waited(), unasked) };
      try {
        const value = await work(member, landing);
        return { host: choice.host, value, waitedMs: waited() };
      } catch (e) {
        if (!lostTheHost(member.client, e)) throw e;
        o.say(`pool: another gate took ${choice.host} first (${(e as Error).message}); looking again`);
        continue;
      }
    }
    if (!choice.waitable || Date.now() >= o.busyDeadline) throw noHost(choice);
    const awaited = choice.standings.filter(
      (s): s is BusyStanding => s.state === "busy" && (!choice.stay || s.name === choice.host),
    );
    if (choice.stay && !saidWaiting)
      o.say(`pool: ${choice.host} holds the earlier runs of ${o.sha?.slice(0, 7)}: waiting for it while it is busy`);
    saidWaiting ||= choice.stay;
    await untilOneFrees(pool, awaited, { deadline: o.busyDeadline, pollMs, unwatchable });
  }
}

type BusyStanding = Extract<Standing, { state: "busy" }>;

/**
 * Waits until one of the busy hosts may be free: the run holding each is watched to its end (one
 * session for the run's length instead of a look every poll: a look is a session, ~0.17 s of the
 * host's CPU in the middle of another gate's slices); a host held by anything else (a promotion,
 * gc), or by a run that cannot be watched, is looked at again after a poll. Never past the deadline.
 */
async function untilOneFrees(
  pool: HostPool,
  busy: BusyStanding[],
  o: { deadline: number; pollMs: number; unwatchable: Set<string> },
): Promise<void> {
  const done = new AbortController();
  const pause = (ms: number) => sleep(Math.max(0, ms), undefined, { signal: done.signal }).catch(() => {});
  const started = Date.now();
  const waits = busy.map(async (s) => {
    if (!s.run || o.unwatchable.has(s.run)) return pause(o.pollMs);
    await pool.member(s.name).client.watch(s.run, done.signal);
    // A watch that ends at once (the run just ended, or the host refuses it) is not tried on that run again.
    if (Date.now() - started < 1000) o.unwatchable.add(s.run);
  });
  await Promise.race([...waits, pause(o.deadline - Date.now())]);
  done.abort();
}

/** A claim lost to another gate: the host was free when looked at and busy when the run started. */
function lostTheHost(client: BenchmarkHost, e: unknown): boolean {
  return e instanceof HostError && e.kind === "busy" && client.claim.claiming;
}

async function earlierRuns(pool: HostPool, sha: string): Promise<Map<string, HostSurvey["runs"]>> {
  const readings = await pool.ask((c) => c.runsOf(sha));
  return new Map(readings.flatMap((r) => (r.ok ? [[r.name, r.value] as const] : [])));
}

async function survey(pool: HostPool, runs: Map<string, HostSurvey["runs"]>): Promise<HostSurvey[]> {
  const readings = await pool.ask((c) => c.status());
  return readings.map((r) =>
    r.ok
      ? { name: r.name, status: r.value, runs: runs.get(r.name) ?? [] }
      : { name: r.name, status: null, unreachable: r.error.message },
  );
}

/** No host can take the gate: every one busy past the deadline, refused or unreachable. */
function noHost(choice: Choice): HostError {
  const lines = choice.standings.map(standingLine).join("; ");
  if (choice.stay)
    return new HostError("busy", `${choice.host}, the host of this build's earlier runs, stayed busy: ${lines}`);
  if (choice.waitable)
    return new HostError("busy", `every host of the pool that can take this gate stayed busy: ${lines}`);
  const kind = choice.standings.every((s) => s.state === "unreachable") ? "unreachable" : "refused";
  return new HostError(kind, `no host of the pool can take this gate: ${lines}`);
}

/** Where the gate ran and what the other hosts were doing; and the hosts whose earlier runs of the build could not be asked for. */
function landingNotes(choice: Choice, size: number, waitedMs: number, unasked: string[]): string[] {
  const others = choice.standings.filter((s) => s.name !== choice.host);
  const waited = waitedMs >= 1000 ? `, after waiting ${Math.round(waitedMs / 1000)} s for it` : "";
  const notes = [
    `🖥️ **Host**: measured on \`${choice.host}\` (a pool of ${size}${waited}); ${others.map(otherLine).join("; ")}.`,
  ];
  if (unasked.length > 0)
    notes.push(
      `Earlier runs of this build on ${unasked.map((n) => `\`${n}\``).join(", ")} could not be asked for (unreachable): any there are not pooled with this gate.`,
    );
  return notes;
}

function otherLine(s: Standing): string {
  return s.state === "free"
    ? `\`${s.name}\` free`
    : s.state === "busy"
      ? `\`${s.name}\` busy`
      : `\`${s.name}\` ${s.state}: ${s.reason}`;
}
