// The hosts of a pool as a user writes them (the action's host input, the CLI's --host) and the
// pinned key lines that must cover each (known-hosts): parsed and checked once, with errors that
// name the field, the entry and the expected form. Pure.

export interface HostAddress {
  /** A host name, an IPv4 address, or an IPv6 address (without brackets). */
  host: string;
  port: number;
  /** The SSH login on this host, when it is not the pool's (USER@HOST). */
  user?: string;
  /** How reports and logs name it: host, or host:port when the port is not the default. */
  name: string;
}

/** More hosts than this is a typo or a paste, not a pool a team runs (each host is a machine). */
const MAX_POOL_HOSTS = 32;

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$/;
const USER = /^[a-z_][a-z0-9_-]{0,31}$/;
const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;

/**
 * Hosts separated by commas, spaces or new lines; each `HOST`, `HOST:PORT`, `[IPV6]` or
 * `[IPV6]:PORT`, a bare IPv6 address taken whole, optionally after `USER@` for a host whose SSH
 * login is not the pool's. HOST without a port gets `defaultPort`.
 */
export function parseHostList(text: string, defaultPort: number, field: string): HostAddress[] {
  const entries = text.split(/[\s,]+/).filter(Boolean);
  if (entries.length > MAX_POOL_HOSTS)
    throw new Error(`${field}: ${entries.length} hosts; a pool holds at most ${MAX_POOL_HOSTS}`);
  const out: HostAddress[] = [];
  for (const entry of entries) {
    const a = parseEntry(entry, defaultPort);
    if (!a) {
      throw new Error(
        `${field}: "${entry}" is not a host: expected a name or IP address, optionally with :PORT and USER@ (bench-1.example.com, 10.0.0.5:2222, perf-gate-ci@[fd00::5]:2222), several separated by commas`,
      );
    }
    if (out.some((o) => o.host.toLowerCase() === a.host.toLowerCase() && o.port === a.port))
      throw new Error(`${field}: ${a.name} is listed twice`);
    out.push(a);
  }
  return out;
}

function parseEntry(given: string, defaultPort: number): HostAddress | null {
  const at = given.indexOf("@");
  const user = at >= 0 ? given.slice(0, at) : undefined;
  if (user !== undefined && !USER.test(user)) return null;
  const entry = given.slice(at + 1);
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  const [host, portText] = bracketed
    ? [bracketed[1]!, bracketed[2]]
    : IPV6.test(entry) && entry.split(":").length > 2
      ? [entry, undefined]
      : splitPort(entry);
  const port = portText === undefined ? defaultPort : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const v6 = host.includes(":");
  if (v6 ? !IPV6.test(host) : !NAME.test(host)) return null;
  const shown = v6 ? `[${host}]` : host;
  return { host, port, ...(user ? { user } : {}), name: port === 22 ? host : `${shown}:${port}` };
}

function splitPort(entry: string): [string, string | undefined] {
  const m = /^([^:]+):(\d{1,5})$/.exec(entry);
  return m ? [m[1]!, m[2]!] : [entry, undefined];
}

/**
 * The known_hosts pattern ssh looks a host up by: `host` on port 22, `[host]:port` on any other.
 */
export function knownHostsPattern(a: Pick<HostAddress, "host" | "port">): string {
  return a.port === 22 ? a.host : `[${a.host}]:${a.port}`;
}

/**
 * Every host must have a pinned key line: ssh refuses a host without one (StrictHostKeyChecking),
 * and saying which host lacks it here is clearer than a failed login mid-gate. A hashed line
 * (`|1|…`) may be any host's, so with one present the check cannot tell and lets ssh decide.
 */
export function checkKnownHosts(text: string, hosts: readonly HostAddress[], field: string): void {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  if (lines.some((l) => l.startsWith("|"))) return;
  const patterns = lines.flatMap((l) =>
    (l.startsWith("@") ? (l.split(/\s+/)[1] ?? "") : (l.split(/\s+/)[0] ?? "")).split(","),
  );
  for (const h of hosts) {
    const wanted = knownHostsPattern(h);
    if (!patterns.some((p) => !p.startsWith("!") && globMatches(p, wanted))) {
      throw new Error(
        `${field}: no line pins ${h.name}'s host key: give one line per host of the pool, as install.sh prints it ("${wanted} ssh-ed25519 AAAA…")`,
      );
    }
  }
}

/** ssh's known_hosts patterns: `*` and `?` wildcards, compared case-insensitively. */
function globMatches(pattern: string, name: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${re}$`, "i").test(name);
}
