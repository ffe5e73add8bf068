// Which host of a pool a gate lands on: the pool's champion (the one made most recently), hosts
// refused for serving another, the host of a build's earlier runs first, and free hosts tried in
// an order of the gate's own so that gates starting together spread.
import { describe, expect, it } from "vitest";
import type { HostStatus, RunSummary } from "../../src/contract/host";
import { chooseHost, type HostSurvey, poolChampion, standingLine, standings } from "../../src/experiment/landing";

const W = "a".repeat(40);
const X = "b".repeat(40);
const BUILD = "c".repeat(40);

function status(champion: string, since: string | undefined, lock: HostStatus["lock"] = null): HostStatus {
  return {
    perf_host_version: "test",
    champion,
    ...(since ? { champion_since: since } : {}),
    previous: "",
    champion_supervised: true,
    lock,
    floors: {},
    disk_free_bytes: 1,
    memory_available_bytes: 1,
    load_avg: [0, 0, 0],
    releases: [],
    ports: {},
  };
}
const busy = (what: string) => ({ holder: what, pid: 1, since: "2026-11-21T10:00:00Z", age_seconds: 42.4 });
const run = (champion: string, o: Partial<RunSummary> = {}): RunSummary => ({
  run_id: "pr1-ccccccc-1-1-0",
  kind: "ab",
  status: "ok",
  champion_sha: champion,
  challenger_sha: BUILD,
  workload: "w",
  rate: 100,
  started: "2026-11-21T10:00:00Z",
  ended: "2026-11-21T10:02:00Z",
  ...o,
});
const host = (name: string, s: HostStatus | null, runs: RunSummary[] = []): HostSurvey =>
  s ? { name, status: s, runs } : { name, status: null, unreachable: "cannot reach the benchmark host" };

describe("the pool's champion", () => {
  it("is the one made most recently on any reachable host", () => {
    const surveys = [
      host("a", status(W, "2026-11-20T09:00:00Z")),
      host("b", status(X, "2026-11-21T09:00:00Z")),
      host("c", status(W, "2026-11-20T09:00:01Z")),
    ];
    expect(poolChampion(surveys)).toEqual({ sha: X, since: "2026-11-21T09:00:00Z" });
  });

  it("a rollback on most hosts wins over the host it could not reach", () => {
    // c was down for the rollback: it still serves X, promoted before the others rolled back to W.
    const surveys = [
      host("a", status(W, "2026-11-22T09:00:00Z")),
      host("b", status(W, "2026-11-22T09:00:02Z")),
      host("c", status(X, "2026-11-21T09:00:00Z")),
    ];
    expect(poolChampion(surveys)?.sha).toBe(W);
  });

  it("without times (an older perf-host), the champion most hosts serve, then the first listed", () => {
    expect(
      poolChampion([host("a", status(W, undefined)), host("b", status(X, undefined)), host("c", status(X, undefined))])
        ?.sha,
    ).toBe(X);
    expect(poolChampion([host("a", status(W, undefined)), host("b", status(X, undefined))])?.sha).toBe(W);
    // A host that says when beats those that do not.
    expect(
      poolChampion([
        host("a", status(W, undefined)),
        host("b", status(W, undefined)),
        host("c", status(X, "2026-01-01T00:00:00Z")),
      ])?.sha,
    ).toBe(X);
    expect(poolChampion([host("a", null), host("b", status("", undefined))])).toBeNull();
  });
});

describe("each host's standing", () => {
  it("free, busy with its holder, refused (another champion, or none), unreachable", () => {
    const surveys = [
      host("a", status(X, "2026-11-21T09:00:00Z")),
      host("b", status(X, "2026-11-21T09:00:03Z", busy("ab pr12-3f2a9c1-77-1-0"))),
      host("c", status(W, "2026-11-20T09:00:00Z")),
      host("d", status("", undefined)),
      host("e", null),
    ];
    const lines = standings(surveys, poolChampion(surveys)).map(standingLine);
    expect(lines).toEqual([
      "a: free",
      "b: busy (ab pr12-3f2a9c1-77-1-0 since 2026-11-21T10:00:00Z (42 s))",
      "c: refused (it serves champion aaaaaaa, not the pool's bbbbbbb (champion since 2026-11-21T09:00:03Z): refused for gates until it is promoted)",
      "d: refused (it has no champion yet: promote one (perf-promote.yml))",
      "e: unreachable (cannot reach the benchmark host)",
    ]);
  });
});

describe("chooseHost", () => {
  const since = "2026-11-21T09:00:00Z";

  it("takes a free host, never a refused or unreachable one", () => {
    const surveys = [
      host("a", status(W, "2026-11-20T00:00:00Z")),
      host("b", null),
      host("c", status(X, since, busy("ab x"))),
      host("d", status(X, since)),
    ];
    expect(chooseHost(surveys, { key: "pr1-ccccccc-9-1" })).toMatchObject({ host: "d", stay: false, waitable: true });
  });

  it("with every host that may take it busy, takes none and may wait; with none that may, may not", () => {
    const allBusy = [
      host("a", status(X, since, busy("ab x"))),
      host("b", status(X, since, busy("ab y"))),
      host("c", null),
    ];
    expect(chooseHost(allBusy, { key: "k" })).toMatchObject({ host: null, waitable: true });
    const noneCan = [host("a", null), host("b", status("", undefined))];
    expect(chooseHost(noneCan, { key: "k" })).toMatchObject({ host: null, waitable: false });
  });

  it("spreads gates that start together: free hosts in an order drawn from each gate's key", () => {
    const surveys = ["a", "b", "c", "d"].map((n) => host(n, status(X, since)));
    const picks = Array.from({ length: 400 }, (_, i) => chooseHost(surveys, { key: `pr${i}-ccccccc-1-1` }).host!);
    const counts = new Map<string, number>();
    for (const p of picks) counts.set(p, (counts.get(p) ?? 0) + 1);
    // Each of four hosts first for about a quarter of the gates (binomial sd ~8.7 around 100).
    for (const n of ["a", "b", "c", "d"]) expect(counts.get(n)).toBeGreaterThan(70);
    // And the same gate always tries them in the same order.
    expect(chooseHost(surveys, { key: "pr7-ccccccc-1-1" }).host).toBe(
      chooseHost(surveys, { key: "pr7-ccccccc-1-1" }).host,
    );
  });

  it("sends a build back to the host of its earlier runs against the pool's champion, and stays there while it is busy", () => {
    const surveys = [
      host("a", status(X, since), []),
      host("b", status(X, since, busy("ab other")), [run(X), run(X, { run_id: "pr1-ccccccc-2-1-0" })]),
      host("c", status(X, since), [run(X, { status: "error" }), run(X, { kind: "aa" })]),
    ];
    expect(chooseHost(surveys, { key: "k" })).toMatchObject({ host: "b", stay: true, earlier: ["b"] });
  });

  it("earlier runs against another champion, or on a refused host, do not hold the build", () => {
    const surveys = [
      host("a", status(X, since), [run(W)]),
      host("b", status(W, "2026-11-01T00:00:00Z"), [run(W), run(W)]),
      host("c", status(X, since)),
    ];
    const c = chooseHost(surveys, { key: "k" });
    expect(c.earlier).toEqual([]);
    expect(c.stay).toBe(false);
    expect(["a", "c"]).toContain(c.host);
  });

  it("under comparison_base merge-base, runs against the merge base hold the build too", () => {
    const base = "d".repeat(40);
    const surveys = [host("a", status(X, since)), host("b", status(X, since), [run(base)])];
    expect(chooseHost(surveys, { key: "k", mergeBase: base })).toMatchObject({ host: "b", stay: true });
    expect(chooseHost(surveys, { key: "k" }).earlier).toEqual([]);
  });
});
