#!/usr/bin/env node
// The perf-gate command line. Exit codes: 0 pass, 1 blocking regression, 2 error, 130 interrupted.
// esbuild inlines only this field of package.json into the bundle.
import { version } from "../../package.json";
import { ConfigError } from "../config/gate-config";
import { analyzeCommand, analyzeUsage } from "./analyze";
import { capacityCommand, capacityUsage } from "./capacity";
import { historyCommand, historyUsage } from "./history";
import { Interrupted, runCommand, runUsage } from "./run";
import { UsageError } from "./usage";

const usage = `usage: perf-gate <command> [options]
       perf-gate <command> --help
       perf-gate --version

commands:
  run       the whole gate: deploy, interleaved runs, verdict and report (local or over SSH)
  analyze   compute the verdict from load generator result files
  capacity  a config's host time per gate, and the wait for a host of a pool at a rate of gates
  history   main over time: the host's history as one HTML page (and JSON)

exit codes: 0 pass, 1 blocking regression, 2 error, 130 interrupted (Ctrl-C, SIGTERM, SIGHUP)`;

const tty = process.stdout.isTTY === true;
// On a terminal one progress line is redrawn in place; whatever is printed next ends it first,
// so the verdict's lines (and what the host flagged) are never drawn over.
let drawn = false;
const endDrawn = () => {
  if (drawn) process.stdout.write("\n");
  drawn = false;
};
const runIo = {
  out: (line: string) => {
    endDrawn();
    console.log(line);
  },
  err: (line: string) => {
    endDrawn();
    console.error(line);
  },
  progress: (line: string, done: boolean) => {
    if (!tty) return console.log(line);
    process.stdout.write(`\r\x1b[K${line.slice(0, (process.stdout.columns ?? 120) - 1)}${done ? "\n" : ""}`);
    drawn = !done;
  },
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "run":
        return await runCommand(rest, runIo);
      case "analyze":
        return analyzeCommand(rest, (line) => console.log(line));
      case "capacity":
        return capacityCommand(rest, (line) => console.log(line));
      case "history":
        return await historyCommand(rest, (line) => console.log(line));
      case "--version":
      case "-V":
        console.log(`perf-gate ${version}`);
        return 0;
      case "help":
        console.log(
          (
            { run: runUsage, analyze: analyzeUsage, capacity: capacityUsage, history: historyUsage } as Record<
              string,
              string
            >
          )[rest[0] ?? ""] ?? usage,
        );
        return 0;
      case "-h":
      case "--help":
        console.log(usage);
        return 0;
      case undefined:
        throw new UsageError("no command given", usage);
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`, usage);
    }
  } catch (e) {
    endDrawn();
    const name =
      command && !command.startsWith("-") && ["run", "analyze", "capacity", "history"].includes(command)
        ? ` ${command}`
        : "";
    if (e instanceof UsageError) {
      console.error(`perf-gate${name}: ${e.message}\n\n${e.usage}`);
      return 2;
    }
    if (e instanceof Interrupted) {
      console.error(`perf-gate${name}: ${e.message}`);
      return 130;
    }
    // A config's problems, each on its line with its key: all of them are what to fix.
    if (e instanceof ConfigError) {
      console.error(e.message.replace(/^/gm, `perf-gate${name}: `));
      return 2;
    }
    // One line on the terminal; the rest (a log tail, say) stays available in the report dir.
    const [first, ...more] = (e as Error).message.split("\n");
    console.error(
      `perf-gate${name}: ${first}${more.length > 0 ? ` (+${more.length} lines: rerun with PERF_GATE_DEBUG=1)` : ""}`,
    );
    if (process.env.PERF_GATE_DEBUG) console.error(more.join("\n"));
    return 2;
  }
}

// Output closed under the command (piped into head): what it still writes goes nowhere, and a
// run in flight is aborted (run.ts); an unhandled EPIPE would end it with a stack and exit 1,
// which means a blocking regression.
for (const stream of [process.stdout, process.stderr])
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code !== "EPIPE") throw e;
  });
process.exitCode = await main(process.argv.slice(2));
