// Which host of a pool a gate lands on, from what each host said (its status, and for a build
// measured before, its earlier runs). Pure: the adapter asks, this decides
// (docs/design/0026-a-pool-of-hosts.md).
//
// - The pool's champion is the one most recently made champion (promoted or rolled back) on any
//   reachable host; a host serving another is refused for gates until it is promoted, so every
//   verdict of the pool compares with the same build.
// - A build measured before goes back to the host of its earlier runs, and waits for it while it
//   is busy: runs pool only on one host (each host is its own instrument), and only there does a
//   rerun add to the evidence instead of starting over.
// - Otherwise the gate takes a free host, trying them in an order drawn from its own key, so
//   gates that start together spread over the pool instead of racing for the first host.
import type { HostStatus, RunSummary } from "../contract/host";

export interface HostSurvey {
  name: string;
  /** The host's status; null when it could not be read (then `unreachable` says why). */
  status: HostStatus | null;
  unreachable?: string;
  /** The finished runs of the build to be measured on this host (perf-host runs SHA), when asked. */
  runs?: readonly RunSummary[];
}

export interface PoolChampion {
  sha: string;
  /** When its host made it champion (RFC 3339); null for a perf-host that does not say. */
  since: string | null;
}

export type Standing =
  | { name: string; state: "free" }
  | { name: string; state: "busy"; holder: string; run: string | null }
  | { name: string; state: "refused"; reason: string }
  | { name: string; state: "unreachable"; reason: string };

export interface Choice {
  /** The host to run on; null when none can take the gate now. */
  host: string | null;
  /** Wait for this host's lock while it is busy (the host of the build's earlier runs). */
  stay: boolean;
  /** Whether waiting could help: some host that may take the gate is busy. */
  waitable: boolean;
  champion: PoolChampion | null;
  standings: Standing[];
  /** The hosts holding earlier runs of the build against this champion, by name. */
  earlier: string[];
}

/**
 * The champion made most recently on a reachable host. Hosts that do not say when (an older
 * perf-host) count as older than any that do; among equals, the champion more hosts serve,
 * then the first listed.
 */
export function poolChampion(surveys: readonly HostSurvey[]): PoolChampion | null {
  const serving = surveys.flatMap((s) =>
    s.status?.champion ? [{ sha: s.status.champion, since: s.status.champion_since ?? null }] : [],
  );
  if (serving.length === 0) return null;
  const count = (sha: string) => serving.filter((x) => x.sha === sha).length;
  // A host that does not say when counts as before any that does.
  const time = (since: string | null) => (since ? Date.parse(since) : -1);
  return serving.reduce((best, x) => {
    const later = time(x.since) - time(best.since);
    return later > 0 || (later === 0 && count(x.sha) > count(best.sha)) ? x : best;
  });
}

/** Each host's standing for a gate: free, busy (with its holder), refused or unreachable. */
export function standings(surveys: readonly HostSurvey[], champion: PoolChampion | null): Standing[] {
  return surveys.map((s): Standing => {
    const st = s.status;
    if (!st) return { name: s.name, state: "unreachable", reason: s.unreachable ?? "no status" };
    if (!st.champion)
      return { name: s.name, state: "refused", reason: "it has no champion yet: promote one (perf-promote.yml)" };
    if (champion && st.champion !== champion.sha) {
      return {
        name: s.name,
        state: "refused",
        reason: `it serves champion ${st.champion.slice(0, 7)}, not the pool's ${champion.sha.slice(0, 7)}${champion.since ? ` (champion since ${champion.since})` : ""}: refused for gates until it is promoted`,
      };
    }
    if (st.lock) {
      // A run holds it ("ab RUN-ID", "aa RUN-ID"), or a promotion, rollback or gc does.
      const run = /^(?:ab|aa) ([a-z0-9][a-z0-9-]{2,63})$/.exec(st.lock.holder)?.[1] ?? null;
      return {
        name: s.name,
        state: "busy",
        holder: `${st.lock.holder} since ${st.lock.since} (${Math.round(st.lock.age_seconds)} s)`,
        run,
      };
    }
    return { name: s.name, state: "free" };
  });
}

/**
 * Where a gate of `key` (its run id prefix) goes. `mergeBase` is the build the champion arm runs
 * instead of the champion (comparison_base merge-base), whose earlier runs pool too.
 */
export function chooseHost(surveys: readonly HostSurvey[], o: { key: string; mergeBase?: string }): Choice {
  const champion = poolChampion(surveys);
  const stand = standings(surveys, champion);
  const eligible = stand.filter((s) => s.state === "free" || s.state === "busy");
  const against = new Set([champion?.sha, o.mergeBase].filter(Boolean));
  const earlierOn = (name: string) =>
    (surveys.find((s) => s.name === name)?.runs ?? []).filter(
      (r) => r.kind === "ab" && r.status === "ok" && against.has(r.champion_sha),
    ).length;
  const earlier = eligible.map((s) => s.name).filter((n) => earlierOn(n) > 0);
  const base = { champion, standings: stand, earlier };
  if (earlier.length > 0) {
    const home = earlier.reduce((a, b) => (earlierOn(b) > earlierOn(a) ? b : a));
    return { ...base, host: home, stay: true, waitable: true };
  }
  const free = stand.filter((s) => s.state === "free").map((s) => s.name);
  const [first] = free.sort((a, b) => draw(o.key, a) - draw(o.key, b) || a.localeCompare(b));
  return { ...base, host: first ?? null, stay: false, waitable: eligible.length > 0 };
}

/** A number from a gate's key and a host's name (FNV-1a, then murmur3's finalizer to mix it): the order in which the gate tries free hosts. */
function draw(key: string, name: string): number {
  let h = 0x811c9dc5;
  for (const ch of `${key}\0${name}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** One line per host, for logs and reports: "b.example: busy (ab pr12-… since …)". */
export function standingLine(s: Standing): string {
  switch (s.state) {
    case "free":
      return `${s.name}: free`;
    case "busy":
      return `${s.name}: busy (${s.holder})`;
    default:
      return `${s.name}: ${s.state} (${s.reason})`;
  }
}
