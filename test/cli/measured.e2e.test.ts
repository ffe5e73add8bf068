// A verdict is tied to what was measured, on a real local host (perf-gate run --local from
// the bundle): the config that ran is the one on disk, an arm that did not serve is named, the
// host's own work is not "another job" while a real neighbour is seen, and a run that could not
// measure still says what it measured. The arms' logs stay bounded.
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostResult } from "../../src/contract/result";
import { buildServiceBinaries } from "../support/bench-host";
import { buildHostBinaries } from "../support/loadgen";
import { LocalGate } from "../support/local-gate";
import { skipIfMachineTooBusy, skipTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

let dir: string;
let gate: LocalGate;
/** The example service, and a copy that differs only in its VERSION file: two builds of one code. */
let champion: string;
let challenger: string;
const roots: string[] = [];

const build = (name: string, binary: string, files: Record<string, string> = {}) => {
  const path = join(dir, name);
  mkdirSync(join(path, "bin"), { recursive: true });
  copyFileSync(binary, join(path, "bin/service"));
  chmodSync(join(path, "bin/service"), 0o755);
  for (const [file, text] of Object.entries({ VERSION: `${name}\n`, ...files }))
    writeFileSync(join(path, file), text, { mode: 0o755 });
  return path;
};

const config = ({
  service = "command: [./bin/service]",
  slices = "{seconds: 0.5, pairs: 4}",
  rate = 100,
  healthSeconds = 5,
} = {}) => {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(
    path,
    `service:\n  ${service}\n  health_timeout_seconds: ${healthSeconds}\nslo: {percentile: 90, budget_ms: 50}\nslices: ${slices}\nwarmup_seconds: 0\nworkloads:\n  - name: w\n    rates: [${rate}]\n    requests: [{path: /work}]\n`,
  );
  return path;
};

const root = (name: string) => {
  const path = join(dir, name);
  roots.push(path);
  return path;
};

const results = (out: string) => JSON.parse(readFileSync(join(out, "result.json"), "utf8")) as HostResult[];

beforeAll(async () => {
  const [bin] = await Promise.all([buildServiceBinaries(), buildHostBinaries()]);
  dir = scratchDir("measured");
  chmodSync(dir, 0o755);
  gate = await LocalGate.onFreePorts(dir);
  champion = build("champion", join(bin, "service-fast"));
  challenger = build("challenger", join(bin, "service-fast"));
});

// No supervisor may outlive the tests: later ones count the machine's services.
afterAll(() => {
  for (const r of roots) gate.stop(r);
});

describe("the config that ran", () => {
  it("a changed service spec reaches the champion's arm, --aa runs it on both, and the runs are not pooled", async (ctx) => {
    const host = root("spec");
    const spec = (mark: string) =>
      config({ service: `command: [sh, -c, "echo MARK=$MARK; exec ./bin/service"]\n  env: {MARK: ${mark}}` });
    const first = await gate.run(
      host,
      "--config",
      spec("v1"),
      "--champion",
      champion,
      "--challenger",
      challenger,
      "--out",
      join(dir, "spec-1"),
    );
    skipIfMachineTooBusy(ctx, first);
    expect(first.code, first.stderr).toBeLessThan(2);
    const [one] = results(join(dir, "spec-1"));
    expect(one!.arms!.champion!.log_tail).toContain("MARK=v1");
    expect(one!.identity!.champion_spec_changed).toBeFalsy();

    // The champion stays as promoted (with v1); this config says v2.
    const second = await gate.run(
      host,
      "--config",
      spec("v2"),
      "--champion",
      champion,
      "--challenger",
      challenger,
      "--out",
      join(dir, "spec-2"),
    );
    skipIfMachineTooBusy(ctx, second);
    expect(second.code, second.stderr).toBeLessThan(2);
    const two = results(join(dir, "spec-2"));
    expect(two).toHaveLength(1); // not pooled with the v1 run
    expect(two[0]!.arms!.champion!.log_tail).toContain("MARK=v2");
    expect(two[0]!.arms!.challenger!.log_tail).toContain("MARK=v2");
    expect(two[0]!.identity!.champion_spec_changed).toBe(true);
    expect(two[0]!.identity!.digest).not.toBe(one!.identity!.digest);
    expect(second.stdout).toMatch(
      /champion [0-9a-f]{7} ran with this config's service spec, not the one it was promoted with/,
    );
    expect(second.stdout).toMatch(
      /1 earlier run of [0-9a-f]{7} \(run-\w+-0\) ran another way \(the champion's service spec, the challenger's service spec\) and is not pooled/,
    );

    const aa = await gate.run(host, "--config", spec("v3"), "--aa", "--out", join(dir, "spec-aa"));
    skipIfMachineTooBusy(ctx, aa);
    const [three] = results(join(dir, "spec-aa"));
    expect(three!.arms!.champion!.log_tail).toContain("MARK=v3");
    expect(three!.arms!.challenger!.log_tail).toContain("MARK=v3");
  });
});

describe("both arms must have served", () => {
  it("a champion failing every call against a healthy challenger: exit 2, could not measure naming the champion, the report written", async () => {
    // An old build without the endpoint: healthy, answering every other request 501 at once.
    const server =
      'import http.server,os\nclass H(http.server.BaseHTTPRequestHandler):\n  def do_GET(self):\n    self.send_response(200 if self.path=="/health" else 501); self.end_headers()\n  def log_message(self,*a): pass\nhttp.server.ThreadingHTTPServer(("127.0.0.1",int(os.environ["PORT"])),H).serve_forever()\n';
    const old = build("old-champion", join(champion, "bin/service"), {
      "server.py": server,
      "start.sh": "#!/bin/sh\n[ -e server.py ] && exec python3 server.py\nexec ./bin/service\n",
    });
    const current = build("current", join(champion, "bin/service"), { "start.sh": "#!/bin/sh\nexec ./bin/service\n" });
    const out = join(dir, "failing");
    const r = await gate.run(
      root("failing"),
      "--config",
      config({ service: "command: [./start.sh]" }),
      "--champion",
      old,
      "--challenger",
      current,
      "--out",
      out,
    );
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /^perf-gate run: could not measure: the champion failed (\d+) of \1 requests of workload w @ 100 req\/s \(5xx \1\), the challenger 0 of \d+/m,
    );
    const report = readFileSync(join(out, "report.md"), "utf8");
    expect(report).toMatch(/^### ⚠️ perf-gate could not measure\n\ncould not measure: the champion failed/);
    expect(report).toContain("champion's log tail");
    expect(JSON.parse(readFileSync(join(out, "analysis.json"), "utf8"))).toMatchObject({
      verdict: "could_not_measure",
    });
    expect(results(out)).toHaveLength(1);
  });
});

describe("foreign load", () => {
  it("a neighbour burning a core during the middle pairs: those pairs are dropped as disturbed by foreign load, the others kept", async (ctx) => {
    const out = join(dir, "neighbour");
    const host = root("neighbour");
    let neighbour: { start: number; end: number } | null = null;
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(
        process.execPath,
        [
          ...gate.argv(host),
          "--config",
          config({ slices: "{seconds: 1, pairs: 8}" }),
          "--champion",
          champion,
          "--aa",
          "--out",
          out,
          "--settle-seconds",
          "5",
        ],
        { cwd: dir },
      );
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d: Buffer) => {
        stdout += d;
        // From the 6th slice on, a busy loop on one core for 4 s: pairs 3 and 4 or so.
        if (!neighbour && / slice 6\/16 /.test(stdout)) {
          neighbour = { start: Date.now(), end: Date.now() + 4000 };
          spawn("timeout", ["4", "sh", "-c", "while :; do :; done"], { stdio: "ignore" });
        }
      });
      p.stderr.on("data", (d: Buffer) => (stderr += d));
      p.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
    expect(neighbour, r.stdout + r.stderr).not.toBeNull();
    const [result] = results(out);
    const slices = result!.slices;
    const foreign = slices.map(
      (s) => `${s.index}:${s.arm}:${(s.foreign_cpu_cores ?? NaN).toFixed(2)}${s.host_disturbance ? "!" : ""}`,
    );
    console.log(`foreign CPU cores per slice (! disturbed): ${foreign.join(" ")}`);
    const during = (s: (typeof slices)[number]) =>
      Date.parse(s.end) > neighbour!.start + 200 && Date.parse(s.start) < neighbour!.end - 200;
    // The premise: the host was quiet apart from the neighbour.
    const elsewhere = slices.filter((s) => !during(s) && s.host_disturbance);
    if (elsewhere.length > 0)
      skipTooBusy(
        ctx,
        `foreign load outside the neighbour's window in slices ${elsewhere.map((s) => s.index).join(", ")}`,
      );
    const hit = slices.filter(during);
    expect(hit.length).toBeGreaterThan(0);
    for (const s of hit.filter(
      (x) => Date.parse(x.start) >= neighbour!.start + 300 && Date.parse(x.end) <= neighbour!.end - 300,
    )) {
      expect(s.host_disturbance, `slice ${s.index}`).toMatch(
        /^foreign load: \d\.\d\d CPU cores busy with work other than this run's arms and load generator/,
      );
      expect(s.foreign_cpu_cores!).toBeGreaterThan(0.6);
    }
    const analysis = JSON.parse(readFileSync(join(out, "analysis.json"), "utf8"));
    const dropped = (analysis.comparisons?.[0]?.dropped_pairs ?? analysis.runs?.[0]?.dropped_pairs) as {
      host_disturbances: unknown[];
    }[];
    expect(dropped.filter((d) => d.host_disturbances.length > 0).length).toBeGreaterThan(0);
  });

  it("the host's own work is not another job: two A/A runs back to back both record floors", async (ctx) => {
    const host = root("back-to-back");
    const cfg = config();
    for (const i of [1, 2]) {
      const r = await gate.run(host, "--config", cfg, "--champion", champion, "--aa", "--out", join(dir, `b2b-${i}`));
      skipIfMachineTooBusy(ctx, r);
      if (/quiet: [\d.]+ CPU cores busy with other work after waiting/.test(r.stdout))
        skipTooBusy(ctx, /quiet: .*/.exec(r.stdout)![0]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^A\/A floor for w@100 at p90: ±[\d.]+ ms/m);
    }
  });
});

describe("arm logs", () => {
  it("a service writing 50 MB of logs in a run: the kept log is capped and says how much was cut", async () => {
    const host = root("chatty");
    const out = join(dir, "chatty");
    const r = await gate.run(
      host,
      "--config",
      config({ service: 'command: [sh, -c, "seq 1 7000000; exec ./bin/service"]', healthSeconds: 30 }),
      "--champion",
      champion,
      "--challenger",
      challenger,
      "--out",
      out,
    );
    expect(existsSync(join(out, "result.json")), r.stderr).toBe(true);
    const [result] = results(out);
    for (const arm of ["champion", "challenger"] as const) {
      const a = result!.arms![arm]!;
      expect(a.log_cut_bytes, arm).toBeGreaterThan(40_000_000);
      const log = join(host, "runs", result!.plan.run_id, `${arm}.log`);
      expect(statSync(log).size).toBeLessThanOrEqual((8 << 20) + 1024);
      const text = readFileSync(log, "utf8");
      expect(text).toMatch(/^--- perf-host: starting \w+ .*\n1\n2\n3\n/);
      expect(text).toMatch(
        /\n--- perf-host: \d+ bytes of this log cut here \(it keeps its first 4194304 and last \d+ bytes; the host's --max-arm-log-bytes is 8388608\)\n/,
      );
      expect(text).toContain("\n7000000\n");
      expect(existsSync(`${log}.tail.0`)).toBe(false);
    }
  });
});
