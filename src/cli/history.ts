// `perf-gate history`: the host's history as one self-contained HTML page (and, with --json, the
// history document itself), read from a host (the host flags of `perf-gate run`) or from a
// history file exported earlier (--from). It reads; it never measures or changes the host.
import { statSync, writeFileSync } from "node:fs";
import { type History, MAX_HISTORY_BYTES, parseHistory } from "../contract/history";
import { HostClient } from "../host/client";
import { HostPool } from "../host/pool";
import { historyPage } from "../report/history-page";
import { readBounded } from "./bounded-file";
import { HOST_OPTIONS, hostTarget, type Target } from "./host-flags";
import { distinctFiles, parseCommandLine, UsageError } from "./usage";

export const historyUsage = `usage: perf-gate history --out FILE.html [--json FILE] [--repository OWNER/NAME] [host flags]
       perf-gate history --out FILE.html --from HISTORY.json
  --out FILE.html        the page: main over time per workload, rate and percentile (one file,
                         no network needed to view it)
  --json FILE            also write the history document as the host sent it
  --from HISTORY.json    read a history file (from --json, or the calibration job's artifact)
                         instead of a host
  --repository O/N       the GitHub repository, for pull request links the gates do not carry
  host flags, as perf-gate run takes them:
  --local --root DIR [--perf-host PATH]   perf-host on this machine (the default)
  --host H --port N --user U --key FILE --known-hosts FILE   a host over SSH
  -h, --help             this text
exit codes: 0 written, 2 error (a host that cannot be read, a history file that is not one)`;

export async function historyCommand(argv: string[], say: (line: string) => void): Promise<number> {
  const { values: v, tokens } = parseCommandLine(
    {
      args: argv,
      tokens: true,
      options: {
        out: { type: "string" },
        json: { type: "string" },
        from: { type: "string" },
        repository: { type: "string" },
        ...HOST_OPTIONS,
        help: { type: "boolean", short: "h", default: false },
      },
    },
    historyUsage,
  );
  if (v.help) {
    say(historyUsage);
    return 0;
  }
  if (!v.out) throw new UsageError("--out FILE.html is required", historyUsage);
  // The flags given, from the parser's tokens: parsed values hold the host flags' defaults too.
  const hostFlags = [
    ...new Set(tokens.flatMap((t) => (t.kind === "option" && Object.hasOwn(HOST_OPTIONS, t.name) ? [t.name] : []))),
  ];
  if (v.from && hostFlags.length > 0)
    throw new UsageError(`--from reads a file; it takes no host flags (got --${hostFlags.join(", --")})`, historyUsage);
  distinctFiles(
    [
      ["--from", v.from],
      ["--out", v.out],
      ["--json", v.json],
    ],
    historyUsage,
  );
  if (v.repository !== undefined && !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(v.repository))
    throw new UsageError(`--repository: OWNER/NAME, got ${JSON.stringify(v.repository)}`, historyUsage);
  const { history, document, source } = v.from
    ? { ...fromFile(v.from), source: v.from }
    : await fromHost(hostTarget(v, historyUsage));
  const page = historyPage(history, { source, ...(v.repository ? { repository: v.repository } : {}) });
  writeFileSync(v.out, page);
  if (v.json) writeFileSync(v.json, `${JSON.stringify(document, null, 2)}\n`);
  say(
    `${v.out}: ${history.entries.length} entries (${(Buffer.byteLength(page) / 1024).toFixed(0)} KiB)${v.json ? `; ${v.json}: the history` : ""}`,
  );
  return 0;
}

/**
 * One host's history: a pool's hosts each keep their own, so the command reads one at a time. A
 * local root that is not there is a mistyped one, not an empty history (perf-host would make it).
 */
async function fromHost(target: Target): Promise<{ history: History; document: unknown; source: string }> {
  const root = "local" in target ? target.local.flags[target.local.flags.indexOf("--root") + 1]! : null;
  if (root !== null && !statSync(root, { throwIfNoEntry: false })?.isDirectory())
    throw new UsageError(`--root: ${root} is not a directory: give the root a local host was run in`, historyUsage);
  const pool =
    "local" in target
      ? HostPool.single("the local host", new HostClient(target.local))
      : HostPool.overSsh(target.hosts, target.login);
  try {
    if (pool.size !== 1)
      throw new UsageError(
        `--host: one host at a time (each host of a pool keeps its own history), got ${pool.size}`,
        historyUsage,
      );
    const { name, client } = pool.members[0]!;
    const { message, document } = await client.history();
    return { history: message, document, source: `the history of ${name}` };
  } finally {
    pool.close();
  }
}

/** A history file, refused before it is read whole when it is no regular file or larger than any history. */
export function fromFile(path: string): { history: History; document: unknown } {
  let text: string;
  try {
    text = readBounded(path, MAX_HISTORY_BYTES, "a history").toString("utf8");
  } catch (e) {
    throw new UsageError(`--from ${(e as Error).message}`, historyUsage);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (e) {
    throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
  }
  return { history: parseHistory(path, document), document };
}
