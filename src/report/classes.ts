// The request classes in a report (docs/design/0020-request-classes.md): near the top, one line
// saying which classes moved and which did not (`POST /orders` +3.1 ms [+2.2, +4.0] at p99;
// `GET /items` no detectable change); in each comparison's section, the whole table, folded.
// Pure.
import type { ClassComparison, ClassEstimate } from "../analysis/classes";
import type { Comparison } from "../analysis/verdict";
import type { Arms } from "./arms";
import { codeSpan, confidenceLabel, pValue, signedMs } from "./format";

/** "**Request classes:** `report` +2.1 ms [+1.3, +2.9] at p90; `GET /work` no detectable change." Null without classes. */
export function classesSentence(c: Comparison, prefix: string): string | null {
  if (c.classes.classes.length === 0) return null;
  return `**Request classes${prefix}:** ${c.classes.classes.map(classPhrase).join("; ")}.`;
}

/**
 * One class in words, the SLO percentile first: what moved there with its interval, or that
 * nothing did, then a change at p50 beside it; a class too thin for the SLO percentile is read
 * at p50 and says so.
 */
export function classPhrase(k: ClassComparison): string {
  const name = codeSpan(k.name);
  const change = (e: ClassEstimate) =>
    `${signedMs(e.estimateMs)} ms [${signedMs(e.ciMs[0])}, ${signedMs(e.ciMs[1])}] at p${e.percentile}`;
  const p50 = k.p50?.moved ? change(k.p50) : null;
  if (k.slo?.moved) return `${name} ${change(k.slo)}`;
  if (k.slo) return `${name} no detectable change at p${k.percentile}${p50 ? `; ${p50}` : ""}`;
  const thin = `(too few requests per slice for p${k.percentile})`;
  if (p50) return `${name} ${p50} ${thin}`;
  if (k.p50) return `${name} no detectable change at p50 ${thin}`;
  return `${name} too few requests per slice to compare (${k.recordedPerSlice} recorded)`;
}

/** The folded table of every class: requests, failures, and both percentiles' differences. */
export function classesTable(c: Comparison, arms: Arms): string[] {
  const { classes, missing } = c.classes;
  if (classes.length === 0)
    return missing && !missing.startsWith("the workload has one")
      ? ["", `Request classes: none to show (${missing}).`]
      : [];
  const p = classes[0]!.percentile;
  const cell = (e: ClassEstimate | null, short: string | null) =>
    e
      ? `${signedMs(e.estimateMs)} ms [${signedMs(e.ciMs[0])}, ${signedMs(e.ciMs[1])}]${e.moved ? " **moved**" : ""}, Holm p ${pValue(e.holmP)}`
      : `— (${short})`;
  return [
    "",
    `<details><summary>Request classes: each class's paired difference (${arms.difference}), at ${confidenceLabel(c.confidence)}, Holm across classes</summary>`,
    "",
    `| class | requests ${arms.champion} / ${arms.challenger} | failed | per slice | p${p} | p50 |`,
    "|---|---:|---:|---:|---|---|",
    ...classes.map(
      (k) =>
        `| ${codeSpan(k.name)} | ${k.requests.champion} / ${k.requests.challenger} | ${k.errors.champion} / ${k.errors.challenger} | ${k.recordedPerSlice} | ${cell(k.slo, k.short.slo)} | ${cell(k.p50, k.short.p50)} |`,
    ),
    "",
    "</details>",
  ];
}
