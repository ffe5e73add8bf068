// A pool of three benchmark hosts, each installed by install.sh with its own users, cgroups,
// packet filter, ports and sshd, all on this machine, through the action's bundle under Node 24
// and the GitHub fake: promotion and calibration reach every host; gates spread over the pool
// while another run holds one host; a rerun goes back to the host of its earlier runs and waits
// for it; with one host's sshd down, promotion names it and leaves the rest promoted, gates go to
// the others, and once it is back it is refused for gates until it is promoted; perf-gate run
// --host over the pool gates on a free host and calibrates every host. Each test prints the
// pool's timeline (which gate ran where, and how long it waited).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { examplePayload, REPOSITORY } from "../support/action-harness";
import type { ActionRun } from "../support/action-runner";
import { asRoot } from "../support/bench-host";
import { perfGate } from "../support/cli";
import { disturbedIn, untilQuiet } from "../support/machine-too-busy";
import { PoolHarness } from "../support/pool-harness";
import { scratchDir } from "../support/scratch";

// Three hosts share two cores here: each run's own measurement is not what these tests check,
// so other hosts' runs do not count as foreign load, and a p50 at 100 req/s keeps the load light.
const POOL_CONFIG = `service:
  command: ["./start.sh"]
  health_timeout_seconds: 10
slo: {percentile: 50, budget_ms: 100}
slices: {seconds: 0.5, pairs: 6, max_extensions: 0}
warmup_seconds: 1
workloads:
  - name: work
    rates: [100]
    connections: 2
    requests:
      - path: /work?key={{rand 100}}
`;
const INSTALL_ARGS = ["--max-foreign-cores", "16", "--arm-disk-bytes", String(64 << 20)];

const CHAMPION = "c".repeat(40);
const BASE = "b".repeat(40);
const MERGED = "3234567890abcdef1234567890abcdef12345678";
const NEXT = "4234567890abcdef1234567890abcdef12345678";
const HEADS = [
  "1111111890abcdef1234567890abcdef12345678",
  "2222222890abcdef1234567890abcdef12345678",
  "3333333890abcdef1234567890abcdef12345678",
];

let p: PoolHarness;
/** Each pull request's build, the same files for its gate and its rerun (so the runs are of one identity and pool). */
const builds: string[] = [];
const t0 = Date.now();
const at = (ms: number) => `+${((ms - t0) / 1000).toFixed(1)} s`;

beforeAll(async () => {
  if (!asRoot) return;
  p = await PoolHarness.startPool(3, INSTALL_ARGS);
  await p.installChampion(CHAMPION, p.hosts[0]!.release("fast", "v1"));
  for (const sha of [BASE, MERGED, NEXT]) p.fake.files.set(`.github/perf-gate.yml@${sha}`, POOL_CONFIG);
  p.fake.setRole("Codertocat", "write");
  for (const [i, head] of HEADS.entries()) openPullRequest(i + 1, head);
}, 600_000);

afterAll(async () => {
  await p?.stop();
});

afterEach(() => p?.fake.assertContract());

/** A pull request GitHub holds, open on the base branch, with this head. */
function openPullRequest(number: number, head: string): void {
  p.fake.pulls.set(number, {
    headSha: head,
    baseSha: BASE,
    baseRef: "master",
    state: "open",
    headRepo: REPOSITORY,
    headPushedAt: "2026-11-21T09:00:00Z",
  });
}

type PrPayload = { pull_request: { number: number; head: { sha: string }; base: { sha: string } } };
function prEvent(number: number, head: string): PrPayload {
  const pr = examplePayload<PrPayload>(
    "pull_request",
    (e) => (e as unknown as { action: string }).action === "synchronize",
  );
  pr.pull_request.number = number;
  pr.pull_request.head.sha = head;
  pr.pull_request.base.sha = BASE;
  return pr;
}
const checksOn = (sha: string, name = "perf-gate") =>
  p.fake.checkRuns.filter((c) => c.head_sha === sha && c.name === name);
const push = (after: string) => {
  const e = examplePayload<{ ref: string; after: string; deleted: boolean }>(
    "push",
    (x) => x.ref === "refs/heads/master" && !x.deleted,
  );
  e.after = after;
  return e;
};

/** A run that holds a host for about `seconds` (an A/A run started over ssh, as another job's would be). */
async function hold(i: number, id: string, seconds: number): Promise<void> {
  const plan = {
    service: { command: ["./start.sh"] },
    loadgen: {
      workload: "hold",
      rate: 50,
      slice_seconds: 1,
      pairs: Math.round(seconds / 2),
      warmup_seconds: 1,
      requests: [{ path: "/work" }],
    },
  };
  const r = await p.hosts[i]!.ssh(`aa ${id}`, JSON.stringify(plan));
  expect(r.code, r.stderr).toBe(0);
}
/** The held run ended ok (wait's output says how, if not). */
async function finished(i: number, id: string): Promise<void> {
  const w = await p.hosts[i]!.ssh(`wait ${id}`);
  expect(w.code, `${w.stdout}\n${w.stderr}`).toBe(0);
}

/** Where a gate landed and how long it waited, from its log and its host's record of its runs. */
async function timelineOf(
  label: string,
  run: ActionRun,
  sha: string,
  launched: number,
): Promise<{ host: number; waited: number; start: number; end: number; line: string }> {
  const host = p.indexOf(run.outputs.host ?? "");
  expect(host, run.stdout).toBeGreaterThanOrEqual(0);
  const runs = await p.runsOf(host, sha);
  const waited = Number(/after waiting (\d+) s for it/.exec(checksOn(sha).at(-1)?.output.summary ?? "")?.[1] ?? 0);
  const window = runs.map((r) => `${at(Date.parse(r.started))}..${at(Date.parse(r.ended))}`).join(", ");
  const last = runs.at(-1)!;
  return {
    host,
    waited,
    start: Date.parse(last.started),
    end: Date.parse(last.ended),
    line: `${label}: launched ${at(launched)}, waited ${waited} s for its host, ran on ${p.name(host)} (host ${host}) ${window}`,
  };
}

describe.skipIf(!asRoot)("a pool of three hosts", () => {
  it("promotion reaches every host, each verified by its own A/A check", async () => {
    const r = await p.run(p.inputs("promote", { artifact: p.hosts[0]!.release("fast", "v2") }), "push", push(MERGED), {
      GITHUB_SHA: MERGED,
    });
    expect(r.code, r.stdout).toBe(0);
    expect(r.outputs).toMatchObject({ champion: MERGED, "previous-champion": CHAMPION });
    const check = checksOn(MERGED, "perf-gate / champion").at(-1)!;
    console.log(`[pool] promote: ${check.output.title}`);
    expect(check.output.title).toMatch(
      /^champion is now 3234567 on all 3 hosts \(previous ccccccc kept for rollback\); A\/A check (passed on each|could not measure on .+)$/,
    );
    for (let i = 0; i < 3; i++) {
      const s = await p.status(i);
      expect([s.champion, s.previous]).toEqual([MERGED, CHAMPION]);
      expect(Date.parse(s.champion_since!)).toBeGreaterThan(t0);
      expect(await p.championVersion(i)).toBe("fast v2");
      expect(check.output.summary).toContain(`#### ${p.name(i)}`);
    }
  });

  it("calibration records each host's own floor", async (ctx) => {
    // Three hosts measuring at once on two cores: a host whose generator fell behind records no
    // floor (it says so and fails the job); that is the machine, so measure again.
    const r = await untilQuiet<ActionRun>(ctx, async () => {
      const run = await p.run(p.inputs("calibrate"), "schedule", { schedule: "17 4 * * 1" }, { GITHUB_SHA: MERGED });
      const busy = disturbedIn(run.stdout);
      return busy ? { busy } : { value: run };
    });
    // An unbiased host still fails a calibration by chance (two runs excluding 0, 1 in 400): then the job fails.
    expect(r.code, r.stdout).toBe(r.outputs["host-biased"] === "true" ? 1 : 0);
    const report = readFileSync(r.outputs["report-path"]!, "utf8");
    const floors = [];
    for (let i = 0; i < 3; i++) {
      const floor = (await p.status(i)).floors["work@100/p50"]!;
      expect(floor.run_id).toMatch(/^calibrate-\d+-1-(confirm0-)?0$/);
      expect(report).toContain(`## ${p.name(i)}`);
      floors.push(`${p.name(i)} ±${floor.half_width_ms.toFixed(3)} ms`);
    }
    console.log(`[pool] calibrate: floors ${floors.join(", ")}`);
  });

  it("gates spread over the pool while another run holds one host; one waits for the first host freed", async () => {
    await hold(0, "hold-1", 40);
    const launched = Date.now();
    builds.push(...HEADS.map((_, i) => p.hosts[0]!.release("slow", `slow ${i}`)));
    const runs = await Promise.all(
      HEADS.map((head, i) => p.run(p.inputs("gate", { artifact: builds[i]! }), "pull_request", prEvent(i + 1, head))),
    );
    const timeline = await Promise.all(
      runs.map((r, i) => timelineOf(`gate pr${i + 1} ${HEADS[i]!.slice(0, 7)}`, r, HEADS[i]!, launched)),
    );
    console.log(
      `[pool] timeline (host 0 held by hold-1 from ${at(launched)}):\n${timeline.map((l) => `  ${l.line}`).join("\n")}`,
    );
    for (const [i, r] of runs.entries()) {
      expect(r.code, r.stdout).toBeLessThan(2);
      expect(r.stdout).toMatch(/pool: .*busy \(aa hold-1 since/);
      expect(checksOn(HEADS[i]!).at(-1)!.output.summary).toContain(`on host \`${p.name(timeline[i]!.host)}\``);
    }
    // Both free hosts are used, never the held one; the third gate starts only once one of the first
    // two is done, and it waited longest. (Gates that start together may pick the same host: the
    // one that finds it taken when it claims it looks again, and takes the other if it is free.)
    expect(new Set(timeline.map((l) => l.host))).toEqual(new Set([1, 2]));
    const [a, b, third] = [...timeline].sort((x, y) => x.start - y.start);
    expect(third!.start).toBeGreaterThanOrEqual(Math.min(a!.end, b!.end) - 1000);
    expect(third!.waited).toBeGreaterThan(Math.max(a!.waited, b!.waited));
    await finished(0, "hold-1");
  });

  it("a rerun goes back to the host of its earlier runs and waits for it while it is busy, the other hosts free", async () => {
    const gate1 = (await Promise.all([0, 1, 2].map(async (i) => (await p.runsOf(i, HEADS[0]!)).length))).findIndex(
      (n) => n > 0,
    );
    await hold(gate1, "hold-2", 16);
    const body = "/perf rerun";
    const held = p.fake.addComment(1, body, { login: "Codertocat", id: 1, type: "User", app: null });
    const payload = examplePayload<{
      action: string;
      issue: { number: number; pull_request?: object };
      comment: object;
    }>("issue_comment", (e) => e.action === "created");
    payload.issue.number = 1;
    payload.issue.pull_request = { url: `https://api.github.com/repos/${REPOSITORY}/pulls/1` };
    payload.comment = {
      ...payload.comment,
      id: held.id,
      body,
      created_at: "2026-11-21T10:00:00Z",
      user: { ...(payload.comment as { user: object }).user, login: "Codertocat", type: "User" },
    };
    const launched = Date.now();
    const r = await p.run(p.inputs("rerun", { artifact: builds[0]!, sha: HEADS[0]! }), "issue_comment", payload);
    const line = await timelineOf(`rerun pr1 ${HEADS[0]!.slice(0, 7)}`, r, HEADS[0]!, launched);
    console.log(`[pool] timeline (host ${gate1} held by hold-2 from ${at(launched)}):\n  ${line.line}`);
    expect(r.code, r.stdout).toBeLessThan(2);
    expect(line.host).toBe(gate1);
    expect(r.stdout).toContain(
      `pool: ${p.name(gate1)} holds the earlier runs of ${HEADS[0]!.slice(0, 7)}: measuring there, waiting for it while it is busy`,
    );
    expect(line.waited).toBeGreaterThan(3);
    // Both runs, the earlier one pooled, both on that host.
    const documents = JSON.parse(readFileSync(r.outputs["result-path"]!, "utf8")) as { plan: { run_id: string } }[];
    const onHost = (await p.runsOf(gate1, HEADS[0]!)).map((x) => x.run_id);
    expect(documents.map((d) => d.plan.run_id)).toEqual(onHost);
    expect(onHost).toHaveLength(2);
    await finished(gate1, "hold-2");
  });

  it("one host down: promotion names it and leaves the rest promoted, gates go to the others, and back up it is refused until promoted", async () => {
    p.sshdDown(2);
    const promoted = await p.run(
      p.inputs("promote", { artifact: p.hosts[0]!.release("fast", "v3") }),
      "push",
      push(NEXT),
      { GITHUB_SHA: NEXT },
    );
    const check = checksOn(NEXT, "perf-gate / champion").at(-1)!;
    console.log(`[pool] promote with ${p.name(2)} down: ${check.output.title}`);
    expect(promoted.code).toBe(1);
    expect(check.conclusion).toBe("failure");
    expect(check.output.title).toBe(
      `champion is now 4234567 on ${p.name(0)}, ${p.name(1)}; promotion failed on ${p.name(2)}`,
    );
    expect(check.output.summary).toContain(`\`${p.name(2)}\`: cannot reach the benchmark host`);
    expect(promoted.stdout).toMatch(
      /::error::perf-gate: champion is now 4234567 on .*: 127\.0\.0\.1:\d+: cannot reach the benchmark host/,
    );
    for (const i of [0, 1]) expect((await p.status(i)).champion).toBe(NEXT);
    expect(await p.championVersion(2)).toBe("fast v2"); // left as it was, still serving

    /** A new pull request's gate, which must go to host 0 or 1, saying what host 2 is. */
    const gateWithout2 = async (number: number, head: string, host2: string) => {
      openPullRequest(number, head);
      const gate = await p.run(
        p.inputs("gate", { artifact: p.hosts[0]!.release("fast", "same") }),
        "pull_request",
        prEvent(number, head),
      );
      expect(gate.code, gate.stdout).toBeLessThan(2);
      expect([p.name(0), p.name(1)]).toContain(gate.outputs.host);
      expect(gate.stdout).toContain(`${p.name(2)}: ${host2}`);
      return head;
    };
    const fresh = await gateWithout2(
      5,
      "5555555890abcdef1234567890abcdef12345678",
      "unreachable (cannot reach the benchmark host",
    );
    expect(checksOn(fresh).at(-1)!.output.summary).toContain(`\`${p.name(2)}\` unreachable`);

    await p.sshdUp(2);
    await gateWithout2(
      6,
      "6666666890abcdef1234567890abcdef12345678",
      "refused (it serves champion 3234567, not the pool's 4234567",
    );

    // The workflow run again: the host that missed it is promoted, the others already are.
    const rerun = await p.run(
      p.inputs("promote", { artifact: p.hosts[0]!.release("fast", "v3") }),
      "push",
      push(NEXT),
      { GITHUB_SHA: NEXT },
    );
    expect(rerun.code, rerun.stdout).toBe(0);
    console.log(
      `[pool] promote again, ${p.name(2)} back: ${checksOn(NEXT, "perf-gate / champion").at(-1)!.output.title}`,
    );
    expect((await p.status(2)).champion).toBe(NEXT);
    expect(await p.championVersion(2)).toBe("fast v3");
  });

  it("perf-gate run --host over the pool: a gate on a free host, named; --aa calibrates every host in turn", async () => {
    const dir = scratchDir("pool-cli");
    const files = { config: join(dir, "perf-gate.yml"), known: join(dir, "known_hosts") };
    writeFileSync(files.config, POOL_CONFIG);
    writeFileSync(files.known, `${p.hosts.map((h) => h.info.known_hosts_line).join("\n")}\n`);
    const flags = [
      "--host",
      p.hosts.map((_, i) => p.entry(i)).join(","),
      "--key",
      p.hosts[0]!.info.key,
      "--known-hosts",
      files.known,
      "--config",
      files.config,
    ];
    await hold(1, "hold-3", 30);
    const r = await perfGate([
      "run",
      ...flags,
      "--challenger",
      p.hosts[0]!.release("slow", "cli"),
      "--out",
      join(dir, "gate"),
      "--json",
    ]);
    console.log(
      `[pool] perf-gate run: ${r.stderr
        .split("\n")
        .filter((l) => l.startsWith("pool:"))
        .join(" | ")}`,
    );
    expect(r.code, r.stderr).toBeLessThan(2);
    const summary = JSON.parse(r.stdout);
    expect([p.name(0), p.name(2)]).toContain(summary.host);
    expect(r.stderr).toMatch(/pool: .*busy \(aa hold-3 since/);
    await finished(1, "hold-3");

    const aa = await perfGate(["run", ...flags, "--aa", "--out", join(dir, "aa"), "--json"]);
    expect(aa.code, aa.stderr).toBeLessThan(2);
    const calibrated = JSON.parse(aa.stdout) as {
      hosts: { host: string; calibrations: { key: string; recorded: boolean }[] }[];
    };
    expect(calibrated.hosts.map((h) => h.host)).toEqual([0, 1, 2].map((i) => p.name(i)));
    for (const h of calibrated.hosts) expect(h.calibrations.map((c) => c.key)).toEqual(["work@100"]);
  });
});
