// The report of a gate that could not measure: no verdict, but what was measured, which pairs
// were dropped and why, each arm's requests and failures, and the arms' log tails, so that a
// user can see what the host could not vouch for (a disturbed generator, foreign load, a
// champion that did not serve). Pure.
import { type ArmErrors, armErrors, errorClasses } from "../analysis/failures";
import { extractPairs } from "../analysis/pairs";
import type { NamedResult } from "../analysis/verdict";
import { ARMS } from "../contract/plan";
import type { HostResult, Slice } from "../contract/result";
import { codeBlock } from "./format";
import { droppedPairJson } from "./json";
import { tableCell as cell } from "./markdown";

export interface UnmeasuredReport {
  markdown: string;
  json: ReturnType<typeof unmeasuredJson>;
}

export function unmeasuredReport(error: Error, results: readonly NamedResult[], percentile: number): UnmeasuredReport {
  const runs = results.map((r) => runOf(r, percentile));
  // The rest of the message lists the dropped pairs, which the table below shows.
  const [first] = error.message.split("\n");
  const out = [
    "### ⚠️ perf-gate could not measure",
    "",
    `${first}`,
    "",
    "This is no performance verdict: the measurement could not vouch for itself. What was measured:",
    "",
    "| run | workload | rate | pairs kept | pairs dropped | champion failed | challenger failed |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...runs.map(
      (r) =>
        `| ${cell(r.name)} | ${cell(r.workload)} | ${r.rate} | ${r.kept} | ${r.dropped.length} | ${failed(r.arms.champion)} | ${failed(r.arms.challenger)} |`,
    ),
  ];
  const dropped = runs.flatMap((r) => r.dropped.map((d) => `| ${cell(r.name)} | ${d.pair} | ${cell(d.reason)} |`));
  if (dropped.length > 0)
    out.push(
      "",
      "<details><summary>Dropped pairs and why</summary>",
      "",
      "| run | pair | why |",
      "|---|---:|---|",
      ...dropped,
      "",
      "</details>",
    );
  for (const r of runs) {
    for (const arm of ARMS) {
      const log = r.logs[arm];
      if (!log) continue;
      out.push(
        "",
        `<details><summary>${arm}'s log tail (${cell(r.name)})${log.cutBytes > 0 ? `, ${log.cutBytes.toLocaleString("en-US")} bytes cut from its middle` : ""}</summary>`,
        "",
        codeBlock(log.tail),
        "",
        "</details>",
      );
    }
  }
  return { markdown: `${out.join("\n")}\n`, json: unmeasuredJson(error, runs) };
}

function runOf({ name, result }: NamedResult, percentile: number) {
  const { pairs, dropped } = extractPairs(name, result, percentile);
  const of = (arm: Slice["arm"]) => armErrors(result.slices.filter((s) => s.arm === arm));
  const armStarts = (result as Partial<HostResult>).arms;
  const logs: Partial<Record<Slice["arm"], { tail: string; cutBytes: number }>> = {};
  for (const arm of ARMS) {
    const a = armStarts?.[arm];
    if (a?.log_tail) logs[arm] = { tail: a.log_tail, cutBytes: a.log_cut_bytes ?? 0 };
  }
  return {
    name,
    workload: result.plan.workload,
    rate: result.plan.rate,
    kept: pairs.length,
    dropped,
    arms: { champion: of("champion"), challenger: of("challenger") },
    logs,
  };
}

type Run = ReturnType<typeof runOf>;

function failed(e: ArmErrors): string {
  return e.errors === 0 ? `0 of ${e.requests}` : `${e.errors} of ${e.requests} (${errorClasses(e)})`;
}

function unmeasuredJson(error: Error, runs: Run[]) {
  return {
    verdict: "could_not_measure" as const,
    error: error.message,
    runs: runs.map((r) => ({
      name: r.name,
      workload: r.workload,
      rate: r.rate,
      pairs_kept: r.kept,
      dropped_pairs: r.dropped.map(droppedPairJson),
      arms: Object.fromEntries(
        ARMS.map((arm) => [
          arm,
          {
            requests: r.arms[arm].requests,
            errors: r.arms[arm].errors,
            errors_by_class: r.arms[arm].byClass,
            log_tail: r.logs[arm]?.tail ?? null,
            log_cut_bytes: r.logs[arm]?.cutBytes ?? 0,
          },
        ]),
      ),
    })),
  };
}
