// The flags that say which benchmark host (or pool of hosts) a command talks to, shared by
// `perf-gate run` and `perf-gate history`: perf-host on this machine (--local, the default) or
// hosts over SSH.
import { existsSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/gate-config";
import type { LocalTarget, SshTarget } from "../host/client";
import { checkKnownHosts, type HostAddress, parseHostList } from "../host/targets";
import { readBounded } from "./bounded-file";
import { UsageError } from "./usage";

/** perf-host on this machine, or one or more hosts over SSH. */
export type Target = { local: LocalTarget } | { hosts: HostAddress[]; login: Omit<SshTarget, "host" | "port"> };

/** parseArgs options for the host flags. */
export const HOST_OPTIONS = {
  local: { type: "boolean", default: false },
  root: { type: "string", default: ".perf-gate/host" },
  "perf-host": { type: "string" },
  "champion-port": { type: "string", default: "8001" },
  "challenger-port": { type: "string", default: "8002" },
  "max-foreign-cores": { type: "string", default: "0.25" },
  "settle-seconds": { type: "string", default: "30" },
  "loadgen-cpus": { type: "string" },
  "arm-cpus": { type: "string" },
  cgroup: { type: "string" },
  host: { type: "string", multiple: true },
  port: { type: "string", default: "22" },
  user: { type: "string", default: "perf-gate-ci" },
  key: { type: "string" },
  "known-hosts": { type: "string" },
} as const;

/** The host flags as a target: perf-host on this machine, or one or more hosts over SSH; usage names the command. */
export function hostTarget(v: Record<string, string | boolean | string[] | undefined>, usage: string): Target {
  if (Array.isArray(v.host)) {
    if (!v.key || !v["known-hosts"])
      throw new UsageError(
        "--host needs --key FILE and --known-hosts FILE (the pinned host key line of each host)",
        usage,
      );
    const port = Number(v.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new UsageError(`--port: a port 1-65535, got "${v.port}"`, usage);
    const knownHosts = readText(String(v["known-hosts"]), "--known-hosts", usage);
    try {
      const hosts = parseHostList(v.host.join(","), port, "--host");
      checkKnownHosts(knownHosts, hosts, "--known-hosts");
      return {
        hosts,
        login: { user: String(v.user), privateKey: readText(String(v.key), "--key", usage), knownHosts },
      };
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError((e as Error).message, usage);
    }
  }
  const perfHost = typeof v["perf-host"] === "string" ? v["perf-host"] : defaultPerfHost();
  const placement = (["loadgen-cpus", "arm-cpus"] as const).flatMap((flag) => {
    const list = v[flag];
    if (typeof list !== "string") return [];
    if (!isCpuList(list))
      throw new UsageError(
        `--${flag}: a CPU list such as 0, 0-1 or 2-5,7 (CPUs 0 to ${MAX_CPU}, each range low to high), got "${list}"`,
        usage,
      );
    return [`--${flag}`, list];
  });
  const [championPort, challengerPort] = (["champion-port", "challenger-port"] as const).map((flag) => {
    const port = String(v[flag]);
    if (!/^[1-9][0-9]{0,4}$/.test(port) || Number(port) > 65535)
      throw new UsageError(`--${flag}: a TCP port from 1 to 65535, got "${port}"`, usage);
    return port;
  });
  if (championPort === challengerPort)
    throw new UsageError(`--champion-port and --challenger-port must differ, both are ${championPort}`, usage);
  const cgroup = typeof v.cgroup === "string" ? resolve(v.cgroup) : null;
  if (cgroup !== null && !statSync(cgroup, { throwIfNoEntry: false })?.isDirectory())
    throw new UsageError(`--cgroup: an existing directory under the cgroup v2 mount, got "${v.cgroup}"`, usage);
  return {
    local: {
      perfHost,
      flags: [
        "--root",
        resolve(String(v.root)),
        "--service-user",
        userInfo().username,
        "--champion-port",
        championPort!,
        "--challenger-port",
        challengerPort!,
        "--max-foreign-cores",
        nonNegative(v, "max-foreign-cores", usage),
        "--settle-seconds",
        nonNegative(v, "settle-seconds", usage),
        "--lock-wait",
        "1s",
        "--min-free-disk",
        String(256 << 20),
        // A workstation or VM lets idle CPUs sleep; waking them stalled the generator often
        // enough here to drop most pairs of a short run (benchmark-host/README.md).
        "--hold-cpus-awake",
        ...placement,
        ...(cgroup !== null ? ["--cgroup", cgroup] : []),
      ],
    },
  };
}

/** A flag's value as a non-negative number, or a usage error naming the flag. */
function nonNegative(v: Record<string, string | boolean | string[] | undefined>, flag: string, usage: string): string {
  const text = String(v[flag]);
  if (!/^\d+(\.\d+)?$/.test(text))
    throw new UsageError(`--${flag}: a non-negative number such as 0.25, got "${text}"`, usage);
  return text;
}

/** The highest CPU number perf-host's placement takes (its affinity mask is 1,024 bits). */
const MAX_CPU = 1023;

/** A CPU list as perf-host's --loadgen-cpus and --arm-cpus take it (the kernel's cpulist form). */
function isCpuList(list: string): boolean {
  return list.split(",").every((part) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return false;
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    return lo <= hi && hi <= MAX_CPU;
  });
}

/** perf-host beside this package (a checkout), else on PATH. */
function defaultPerfHost(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidate = resolve(here, "../benchmark-host/bin/perf-host");
  if (existsSync(candidate)) return candidate;
  return "perf-host";
}

/** A file the command line names; --config is the config's (a ConfigError), any other flag's a usage error. */
export function readText(path: string, flag: string, usage: string): string {
  try {
    return readBounded(path, MAX_TEXT_BYTES, TEXT_FILES[flag] ?? "the file").toString("utf8");
  } catch (e) {
    if (flag === "--config") throw new ConfigError((e as Error).message);
    throw new UsageError(`${flag} ${(e as Error).message}`, usage);
  }
}

/** The most a config, a key or a known_hosts file can be. */
const MAX_TEXT_BYTES = 1 << 20;
const TEXT_FILES: Record<string, string> = {
  "--config": "the config",
  "--key": "the key",
  "--known-hosts": "the known_hosts",
};
