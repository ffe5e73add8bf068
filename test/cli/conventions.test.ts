// The command line's conventions, from the committed bundle: --help on every subcommand, and
// usage on a usage error (exit 2) without any debug variable. (--version: package.test.ts.)
import { describe, expect, it } from "vitest";
import { perfGate as run } from "../support/cli";

// Only PATH: no debug variable of the caller's may change what a user sees.
const perfGate = (...args: string[]) => run(args, { env: { PATH: process.env.PATH } });

describe("perf-gate's command line", () => {
  it("--help and -h on every subcommand print its usage and exit 0", async () => {
    for (const [args, first] of [
      [["--help"], "usage: perf-gate <command>"],
      [["run", "--help"], "usage: perf-gate run --challenger DIR|TGZ"],
      [["run", "-h"], "usage: perf-gate run --challenger DIR|TGZ"],
      [["analyze", "--help"], "usage: perf-gate analyze [options] RESULT.json…"],
      [["help", "analyze"], "usage: perf-gate analyze [options] RESULT.json…"],
    ] as const) {
      const r = await perfGate(...args);
      expect(r.code, args.join(" ")).toBe(0);
      expect(r.stdout.startsWith(first), r.stdout).toBe(true);
    }
  });

  it("a usage error names the problem and prints the usage, exit 2", async () => {
    for (const [args, message, usage] of [
      [["run", "--bogus"], /^perf-gate run: Unknown option '--bogus'/, "usage: perf-gate run"],
      [["run", "--config", "x.yml"], /^perf-gate run: --challenger is required \(or --aa\)$/m, "usage: perf-gate run"],
      [
        ["run", "--aa", "--challenger", "x"],
        /^perf-gate run: --aa measures the champion against itself: it takes no --challenger$/m,
        "usage: perf-gate run",
      ],
      [
        ["run", "--challenger", "x", "--champion-port", "70000"],
        /^perf-gate run: --champion-port: a TCP port from 1 to 65535, got "70000"$/m,
        "usage: perf-gate run",
      ],
      [
        ["run", "--challenger", "x", "--challenger-port", "8001"],
        /^perf-gate run: --champion-port and --challenger-port must differ, both are 8001$/m,
        "usage: perf-gate run",
      ],
      [
        ["run", "--challenger", "x", "--cgroup", "/nonexistent/cg"],
        /^perf-gate run: --cgroup: an existing directory under the cgroup v2 mount, got "\/nonexistent\/cg"$/m,
        "usage: perf-gate run",
      ],
      [
        ["analyze", "--seed"],
        /^perf-gate analyze: Option '--seed <value>' argument missing/,
        "usage: perf-gate analyze",
      ],
      [["frobnicate"], /^perf-gate: unknown command "frobnicate"$/m, "usage: perf-gate <command>"],
      [[], /^perf-gate: no command given$/m, "usage: perf-gate <command>"],
    ] as const) {
      const r = await perfGate(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toContain(usage);
    }
  });
});
