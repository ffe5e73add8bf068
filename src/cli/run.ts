// `perf-gate run`: the whole gate from a terminal, for teams on other CI systems and for the
// demo. It runs against a host over SSH, or (the default) against perf-host on this machine.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { calibrationLine, excludesZero } from "../calibration";
import { ConfigError, parseConfig, planRuns } from "../config";
import { judge, recordCalibrations, runExperiments, seedOf } from "../experiment";
import { HostClient, type HostOptions } from "../host/client";
import { quartet } from "../report/quartet";

export const runUsage = `usage: perf-gate run --challenger DIR|TGZ [options]
  --config FILE          the gate config (default .github/perf-gate.yml)
  --challenger PATH      the build under test, a release directory or .tar.gz
  --champion PATH        deploy and promote this build as champion first
  --aa                   an A/A run (the champion on both ports); records the floor
  --out DIR              where report.md, chart.svg, analysis.json, result.json go (default perf-gate-out)
  --local                perf-host on this machine, no SSH (the default):
    --root DIR           its state directory (default .perf-gate/host)
    --perf-host PATH     the perf-host binary (default benchmark-host/bin/perf-host, then PATH)
    --champion-port N    (default 8001)   --challenger-port N   (default 8002)
  --host H               a benchmark host over SSH instead:
    --port N  --user U  --key FILE  --known-hosts FILE
exit codes: 0 pass, 1 blocking regression (with --aa: a biased host, confirmed by a second run), 2 error`;

export class RunUsageError extends Error {
  override name = "RunUsageError";
}

export interface RunIo {
  out: (line: string) => void;
  /** Progress that may be redrawn in place (a TTY), or printed line by line. */
  progress: (line: string, done: boolean) => void;
}

export async function runCommand(argv: string[], io: RunIo): Promise<number> {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      config: { type: "string", default: ".github/perf-gate.yml" },
      challenger: { type: "string" },
      champion: { type: "string" },
      aa: { type: "boolean", default: false },
      out: { type: "string", default: "perf-gate-out" },
      local: { type: "boolean", default: false },
      root: { type: "string", default: ".perf-gate/host" },
      "perf-host": { type: "string" },
      "champion-port": { type: "string", default: "8001" },
      "challenger-port": { type: "string", default: "8002" },
      host: { type: "string" },
      port: { type: "string", default: "22" },
      user: { type: "string", default: "perf-gate-ci" },
      key: { type: "string" },
      "known-hosts": { type: "string" },
    },
  });
  if (!v.aa && !v.challenger) throw new RunUsageError(`--challenger is required (or --aa)\n${runUsage}`);
  if (v.local && v.host) throw new RunUsageError("--local and --host exclude each other");
  const configText = readText(v.config, "--config");
  const config = parseConfig(configText, v.config);
  const host = new HostClient({ ...target(v), log: (l) => io.out(l) });
  try {
    if (v.champion) {
      const sha = digestOf(v.champion);
      const status = await host.status();
      if (status.champion !== sha) {
        io.out(await host.deploy("champion", sha, v.champion));
        io.out(await host.promote(sha, config.service));
      }
    }
    const challengerSha = v.challenger ? digestOf(v.challenger) : undefined;
    if (challengerSha && !v.aa) io.out(await host.deploy("challenger", challengerSha, v.challenger!));
    const options = (what: string, runs: number) => {
      const total = runs * config.slices.pairs * 2;
      let done = 0;
      return {
        runIdPrefix: `${v.aa ? "aa" : "run"}-${Date.now().toString(36)}`,
        seed: seedOf(challengerSha ?? createHash("sha256").update(String(Date.now())).digest("hex")),
        busyDeadline: Date.now(),
        onRunStart: (workload: string, rate: number) => io.out(`${what}: ${workload} @ ${rate} req/s, ${config.slices.pairs} pairs of ${config.slices.seconds} s slices`),
        onLine: (line: string) => {
          if (/ slice \d+\/\d+ /.test(line)) done++;
          io.progress(`${bar(done, total)} ${line.replace(/^\d\d:\d\d:\d\d /, "")}`, done === total);
        },
      };
    };
    const kind = v.aa ? "aa" : "run";
    const experiments = await runExperiments(host, config, { ...options(v.aa ? "A/A" : "champion vs challenger", planRuns(config, undefined, 0).length), kind, challengerSha });
    const status = await host.status();
    const { analysis, reportPath } = judge(experiments, config, status, seedOf(challengerSha ?? "0"), v.out);
    const verdict = `${analysis.verdict.toUpperCase()}${analysis.blocking ? " (blocking)" : analysis.verdict === "red" ? " (advisory)" : ""}`;
    io.out(`${verdict}: ${quartet(analysis.headline, analysis.percentile)}`);
    for (const f of analysis.comparisons.flatMap((c) => c.flags)) io.out(`  note: ${f.code.replace(/_/g, " ")}: ${f.message}`);
    let biased = false;
    if (v.aa) {
      const { calibrations } = await recordCalibrations(host, config, analysis.comparisons, options("A/A confirmation (the interval excluded 0)", analysis.comparisons.filter((c) => excludesZero(c.ciMs)).length));
      for (const c of calibrations) io.out(calibrationLine(c));
      biased = calibrations.some((c) => !c.unbiased);
    }
    io.out(`report: ${relativeOrAbsolute(reportPath)} (chart.svg, analysis.json and result.json beside it)`);
    // An A/A run fails on a confirmed bias, not on its own verdict: the two ports run one build.
    return (v.aa ? biased : analysis.blocking) ? 1 : 0;
  } finally {
    host.close();
  }
}


function target(v: Record<string, string | boolean | undefined>): HostOptions {
  if (typeof v.host === "string") {
    if (!v.key || !v["known-hosts"]) throw new RunUsageError("--host needs --key FILE and --known-hosts FILE (the pinned host key line)");
    return {
      host: v.host, port: Number(v.port), user: String(v.user),
      privateKey: readText(String(v.key), "--key"), knownHosts: readText(String(v["known-hosts"]), "--known-hosts"),
    };
  }
  const perfHost = typeof v["perf-host"] === "string" ? v["perf-host"] : defaultPerfHost();
  return {
    perfHost,
    flags: [
      "--root", resolve(String(v.root)),
      "--service-user", userInfo().username,
      "--champion-port", String(v["champion-port"]),
      "--challenger-port", String(v["challenger-port"]),
      "--lock-wait", "1s",
      "--min-free-disk", String(256 << 20),
    ],
  };
}

/** perf-host beside this package (a checkout), else on PATH. */
function defaultPerfHost(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidate = resolve(here, "../benchmark-host/bin/perf-host");
  if (existsSync(candidate)) return candidate;
  return "perf-host";
}

/** A content digest names a local build, as a commit SHA names a CI build. */
export function digestOf(path: string): string {
  const h = createHash("sha1");
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) {
      for (const e of readdirSync(p).sort()) walk(join(p, e));
    } else {
      h.update(relative(path, p)).update("\0").update(readFileSync(p));
    }
  };
  if (!existsSync(path)) throw new RunUsageError(`${path}: no such build`);
  walk(path);
  return h.digest("hex");
}

function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    if (flag === "--config") throw new ConfigError(`${path}: cannot read the config (${(e as NodeJS.ErrnoException).code})`);
    throw new RunUsageError(`${flag} ${path}: cannot read (${(e as NodeJS.ErrnoException).code})`);
  }
}

function bar(done: number, total: number): string {
  const width = 20;
  const filled = Math.round((width * Math.min(done, total)) / Math.max(1, total));
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`;
}

function relativeOrAbsolute(p: string): string {
  const r = relative(process.cwd(), p);
  return r.startsWith("..") ? p : r;
}
