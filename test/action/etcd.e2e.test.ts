// A real stateful, multi-port service that no one here wrote, through the action: Debian's
// etcd-server (3.4), which keeps its data in ./default.etcd under its working directory and
// locks it, listens on a client and a peer port, and answers a JSON gateway. Before symmetric
// starts a second instance beside the first could not start (the lock; the peer port, 2380 for
// both), so neither the A/A calibration, nor a promotion's A/A check, nor a gate of the champion's
// own build could run, and the champion's data grew with every gate. Now every run starts both arms
// fresh, each with its own ports.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/gate-config";
import type { HostResult } from "../../src/contract/result";
import { ActionHarness, examplePayload } from "../support/action-harness";
import { asRoot } from "../support/bench-host";
import { disturbedIn, skipTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

const ETCD = "/usr/bin/etcd";
const CHAMPION = `c1${"0".repeat(38)}`;
const MERGED = `d2${"0".repeat(38)}`;
const BASE = "b".repeat(40);
const url = (port: string) => `"http://127.0.0.1:${port}"`;
// Base64 keys from templates: "key" and four digits, one key of 10,000 per request.
const key = "a2V5{{rand 10}}{{rand 10}}{{rand 10}}{{rand 10}}";
const CONFIG = `service:
  command: [${ETCD}, --listen-client-urls, ${url("$PORT")}, --advertise-client-urls, ${url("$PORT")},
            --listen-peer-urls, ${url("$PORT_PEER")}, --initial-advertise-peer-urls, ${url("$PORT_PEER")},
            --initial-cluster, "default=http://127.0.0.1:$PORT_PEER"]
  ports: [peer]
  health_path: /health
  health_timeout_seconds: 20
slo: {percentile: 90, budget_ms: 100}
slices: {seconds: 0.5, pairs: 6}
warmup_seconds: 1
promotion: {verify_pairs: 4}
workloads:
  - name: kv
    rates: [200]
    connections: 8
    requests:
      - {method: POST, path: /v3/kv/put, body: '{"key":"${key}","value":"dmFsdWUte3tzZXF9fQ=="}'}
      - {method: POST, path: /v3/kv/range, body: '{"key":"${key}"}', weight: 3}
`;

let h: ActionHarness;
const haveEtcd = existsSync(ETCD);
if (asRoot && !haveEtcd) console.warn(`${ETCD} is missing: the etcd tests are skipped (.ci/run installs etcd-server)`);

/** A release: no binary of its own (the service is Debian's), a VERSION to tell builds apart. */
function release(version: string): string {
  const dir = scratchDir("etcd-release");
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "VERSION"), `${version}\n`);
  return dir;
}

const results = (path: string) => JSON.parse(readFileSync(path, "utf8")) as HostResult[];
const mb = (n: number | undefined) => `${((n ?? 0) / 1e6).toFixed(1)} MB`;
const n2 = (x: string | undefined) => Number(x).toFixed(2);

beforeAll(async () => {
  if (!asRoot || !haveEtcd) return;
  h = await ActionHarness.start(CHAMPION, { release: release("v1"), service: parseConfig(CONFIG, "etcd").service });
  for (const sha of [CHAMPION, MERGED, BASE]) h.fake.files.set(`.github/perf-gate.yml@${sha}`, CONFIG);
});

afterAll(async () => {
  await h?.stop();
});

describe.skipIf(!asRoot || !haveEtcd)("etcd, a stateful multi-port service", () => {
  it("calibrates a floor, passes a promotion's A/A check, and three gates of one build show no trend and no growing data", async (ctx) => {
    // Every step measures: one whose load generator fell behind in most pairs measured the
    // machine ("could not measure"), and the test's premise, a healthy instrument, is gone.
    const unlessTooBusy = (step: string, stdout: string) => {
      const busy = disturbedIn(stdout);
      if (busy) skipTooBusy(ctx, `${step}: ${busy}`);
    };
    const calibrated = await h.run(
      h.inputs("calibrate"),
      "schedule",
      { schedule: "17 4 * * 1" },
      { GITHUB_SHA: CHAMPION },
    );
    unlessTooBusy("calibrate", calibrated.stdout);
    console.log(
      `[etcd calibrate] ${calibrated.stdout.split("\n").find((l) => l.startsWith("A/A ")) ?? calibrated.stdout}`,
    );
    expect(calibrated.outputs["host-biased"], calibrated.stdout).toBeDefined();
    const floor = (await h.hostStatus()).floors["kv@200/p90"];
    expect(floor, calibrated.stdout).toBeDefined();

    const push = examplePayload<{ ref: string; after: string; deleted: boolean }>(
      "push",
      (e) => e.ref === "refs/heads/master" && !e.deleted,
    );
    push.after = MERGED;
    const promoted = await h.run(h.inputs("promote", { artifact: release("v2") }), "push", push, {
      GITHUB_SHA: MERGED,
    });
    unlessTooBusy("promote", promoted.stdout);
    const check = h.fake.checkRuns.filter((c) => c.head_sha === MERGED && c.name === "perf-gate / champion").at(-1)!;
    console.log(`[etcd promote] ${check.output?.title}: ${check.output?.summary?.split("\n").at(-1)}`);
    expect(promoted.code, promoted.stdout).toBe(0);
    expect(check.output!.title).toBe(
      `champion is now ${MERGED.slice(0, 7)} (previous ${CHAMPION.slice(0, 7)} kept for rollback); A/A check passed`,
    );

    // The first gate is of the champion's own build (the same SHA, so the same release on both
    // arms); the next two of the same content under other commits, so no gate pools another.
    const heads = [MERGED, `e3${"0".repeat(38)}`, `f4${"0".repeat(38)}`];
    const estimates: string[] = [];
    const championData: number[] = [];
    for (const [i, head] of heads.entries()) {
      const pr = examplePayload<{ pull_request: { number: number; head: { sha: string }; base: { sha: string } } }>(
        "pull_request",
        (e) => (e as unknown as { action: string }).action === "synchronize",
      );
      pr.pull_request.head.sha = head;
      pr.pull_request.base.sha = BASE;
      h.fake.pulls.set(pr.pull_request.number, {
        headSha: head,
        baseSha: BASE,
        baseRef: "master",
        state: "open",
        headRepo: "Codertocat/Hello-World",
        headPushedAt: "2026-11-21T09:00:00Z",
      });
      const gate = await h.run(h.inputs("gate", { artifact: release("v2") }), "pull_request", pr);
      const o = gate.outputs;
      unlessTooBusy(`gate ${i + 1}`, gate.stdout);
      expect(o.verdict, gate.stdout).toMatch(/^(green|grey|red)$/);
      const [r] = results(o["result-path"]!);
      const arms = r!.arms!;
      const quoted = `${n2(o["estimate-ms"])} ms (97.5% CI [${n2(o["ci-low-ms"])}, ${n2(o["ci-high-ms"])}])`;
      estimates.push(`${o.verdict} ${quoted}`);
      console.log(
        `[etcd gate ${i + 1}] ${o.verdict}${o.blocking === "true" ? " (blocking)" : ""}: ${quoted} over ${o.pairs} pairs; ` +
          `data left: champion ${mb(arms.champion!.work_bytes)}, challenger ${mb(arms.challenger!.work_bytes)}; ports ${JSON.stringify(arms.champion!.ports)} and ${JSON.stringify(arms.challenger!.ports)}`,
      );
      expect(o.blocking, gate.stdout).toBe("false");
      expect(arms.champion!.ports.PORT_PEER).not.toBe(arms.challenger!.ports.PORT_PEER);
      championData.push(arms.champion!.work_bytes!);
      // Both arms start empty and take the same load: they leave about the same data.
      expect(arms.champion!.work_bytes! / arms.challenger!.work_bytes!).toBeGreaterThan(0.8);
      expect(arms.champion!.work_bytes! / arms.challenger!.work_bytes!).toBeLessThan(1.25);
    }
    console.log(`[etcd] three gates of one build: ${estimates.join("; ")}`);
    // The champion's data does not grow from gate to gate: each run starts it empty.
    expect(Math.max(...championData) / Math.min(...championData)).toBeLessThan(1.25);
  });
});
