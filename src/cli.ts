#!/usr/bin/env node
// The perf-gate command line. Exit codes: 0 pass, 1 blocking regression, 2 error.
import { analyzeCommand, analyzeUsage } from "./cli/analyze";

const usage = `usage: perf-gate <command> [options]

commands:
  analyze   compute the verdict from load generator result files

${analyzeUsage}`;

function main(argv: string[]): number {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "analyze":
        return analyzeCommand(rest, (line) => console.log(line));
      case undefined:
      case "-h":
      case "--help":
        console.log(usage);
        return command === undefined ? 2 : 0;
      default:
        console.error(`perf-gate: unknown command ${JSON.stringify(command)}\n${usage}`);
        return 2;
    }
  } catch (e) {
    console.error(`perf-gate ${command}: ${(e as Error).message}`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
