// perf-gate run --local with container images as the builds: the example service as FROM
// scratch images (docker save's archive, and an OCI layout directory the CLI packs), run by the
// host through runc. A slower image is red, the same image on both arms grey, and after each run
// nothing of either arm is left: no process, no mount, no cgroup runc made.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { aaAllowingChance } from "../support/aa-by-chance";
import { dockerSave, ociLayout } from "../support/image";
import { buildHostBinaries, repoRoot } from "../support/loadgen";
import { LocalGate, perfHost } from "../support/local-gate";
import { skipIfMachineTooBusy } from "../support/machine-too-busy";
import { scratchDir } from "../support/scratch";

const runc = ["/usr/sbin/runc", "/usr/bin/runc"].find(existsSync);
let dir: string;
let gate: LocalGate;
let fast: string;
let slow: string;

// No service.command: the image's entrypoint runs.
const config = () => {
  const path = join(dir, "config.yml");
  writeFileSync(
    path,
    "service:\n  health_timeout_seconds: 5\nslo: {percentile: 50, budget_ms: 50}\nslices: {seconds: 0.5, pairs: 8}\nwarmup_seconds: 0\nworkloads:\n  - name: w\n    rates: [100]\n    requests: [{path: /work}]\n",
  );
  return path;
};

// Other work on this machine may take some CPU; what it took is in the host's result either way.
const perfGate = (root: string, ...args: string[]) =>
  gate.run(root, "--max-foreign-cores", "64", "--settle-seconds", "1", ...args);

/** What of a run's arms is still there: their processes, mounts under the test's directory, cgroups runc made. */
function leftovers(): string[] {
  const left: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let args = "";
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {
      continue;
    }
    if (args === "/app/server" || (args.startsWith("/usr/sbin/runc") && args.includes(dir)))
      left.push(`process ${pid}: ${args}`);
  }
  left.push(
    ...readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .filter((l) => l.includes(dir)),
  );
  for (const hierarchy of readdirSync("/sys/fs/cgroup")) {
    try {
      left.push(
        ...readdirSync(join("/sys/fs/cgroup", hierarchy))
          .filter((g) => /^(champion|challenger)-\d+-\d+$/.test(g))
          .map((g) => `cgroup ${hierarchy}/${g}`),
      );
    } catch {}
  }
  return left;
}

const verdictLine = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => /^(GREY|RED|GREEN)/.test(l))
    .join("\n");

beforeAll(async () => {
  await buildHostBinaries();
  dir = scratchDir("image-run");
  chmodSync(dir, 0o755);
  // Static binaries, as a FROM scratch image needs them.
  for (const v of ["fast", "slow"]) {
    execFileSync("go", ["build", "-tags", v, "-o", join(dir, `service-${v}`), "./examples/service"], {
      cwd: join(repoRoot, "benchmark-host"),
      env: { ...process.env, CGO_ENABLED: "0" },
    });
  }
  fast = dockerSave(join(dir, "service-fast"), "fast image", join(dir, "fast.tar"));
  slow = ociLayout(join(dir, "service-slow"), "slow image", join(dir, "slow-oci"));
  gate = await LocalGate.onFreePorts(dir);
}, 180_000);

describe.skipIf(!runc)("perf-gate run --local with container images", () => {
  it("a slower image (an OCI layout directory) against a docker save archive is red; nothing of either arm is left", async (ctx) => {
    const root = join(dir, "h1");
    const r = await perfGate(root, "--config", config(), "--champion", fast, "--challenger", slow);
    console.log(`[image red] ${verdictLine(r.stdout)}`);
    skipIfMachineTooBusy(ctx, r);
    expect(r.stdout, r.stderr).toMatch(/^RED/m);
    // Blocking exits 1; a run the host flagged (a busy machine) reads advisory and exits 0.
    expect(r.code, r.stderr).toBe(/^RED \(blocking\)/m.test(r.stdout) ? 1 : 0);
    const said = r.stdout + r.stderr;
    expect(said).toMatch(
      /deployed champion \w+ \(container image sha256:[0-9a-f]{64}, 1 layers, runs \["\/app\/server"\]\)/,
    );
    expect(said).toMatch(/deployed challenger \w+ \(container image sha256:/);
    expect(leftovers()).toEqual([]);
  }, 200_000);

  it("the same image on both arms is grey; nothing of either arm is left", async (ctx) => {
    const { r, root } = await aaAllowingChance(
      async (attempt) => {
        expect(leftovers()).toEqual([]);
        const root = join(dir, `h${2 + attempt}`);
        const r = await perfGate(root, "--config", config(), "--champion", fast, "--challenger", fast);
        console.log(`[image same] ${verdictLine(r.stdout)}`);
        skipIfMachineTooBusy(ctx, r);
        return { r, root };
      },
      ({ r }) => !/^GREY/m.test(r.stdout) && r.code < 2,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^GREY/m);
    expect(leftovers()).toEqual([]);
    expect(spawnSync(perfHost, ["status", ...gate.hostFlags(root)]).status).toBe(0);
  }, 200_000);
});
