// Lines a report carries after its headline about its evidence: reruns pooled, earlier runs
// left out, a candidate champion. Pure.
import type { Analysis } from "../analysis/verdict";
import type { HostResult } from "../contract/result";
import type { Evidence } from "../experiment/measure";

const runs = (n: number) => `${n} earlier run${n === 1 ? "" : "s"}`;

export function evidenceNotes(
  sha: string,
  e: Pick<Evidence, "pooled" | "otherChampion" | "otherIdentity" | "unreadable">,
): string[] {
  const short = sha.slice(0, 7);
  const out: string[] = [];
  if (e.pooled.length > 0) {
    out.push(
      `🔁 **Rerun**: pooled with ${runs(e.pooled.length)} of ${short} (${e.pooled.join(", ")}); the interval is at the lower confidence each further look needs.`,
    );
  }
  if (e.otherChampion.length > 0) {
    out.push(
      `${runs(e.otherChampion.length)} of ${short} (${e.otherChampion.join(", ")}) measured another champion and ${e.otherChampion.length === 1 ? "is" : "are"} not pooled.`,
    );
  }
  for (const [differs, ids] of groupBy(e.otherIdentity)) {
    out.push(
      `${runs(ids.length)} of ${short} (${ids.join(", ")}) ran another way (${differs}) and ${ids.length === 1 ? "is" : "are"} not pooled.`,
    );
  }
  for (const { runId, why } of e.unreadable)
    out.push(
      `An earlier run of ${short} (${runId}) is not pooled: the host's answer is not a result it could have measured (${why}).`,
    );
  return out;
}

/** Runs that differ in the same parts, together: "the CPU placement" → [run ids]. */
function groupBy(other: Evidence["otherIdentity"]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { runId, differs } of other) {
    const key = differs.join(", ");
    out.set(key, [...(out.get(key) ?? []), runId]);
  }
  return out;
}

/**
 * Said when the champion arm ran the champion's build with the run's service spec, which
 * differs from the one it was promoted with: the verdict compares the builds under this config.
 */
export function identityNotes(a: Pick<Analysis, "builds">, documents: readonly unknown[]): string[] {
  const changed = documents.some((d) => (d as Partial<HostResult> | null)?.identity?.champion_spec_changed);
  if (!changed || !a.builds) return [];
  return [
    `⚙️ **Service spec**: champion ${a.builds.champion_sha.slice(0, 7)} ran with this config's service spec, not the one it was promoted with.`,
  ];
}

/** A green challenger is a candidate champion: merging it makes it the champion. */
export function candidateNote(a: Analysis, sha: string, champion: string): string[] {
  // Faster than its merge base says nothing about the champion, which main may have moved past.
  if (a.verdict !== "green" || a.builds?.base === "merge-base") return [];
  return [
    `🏆 **Candidate champion**: ${sha.slice(0, 7)} is faster than the champion ${champion.slice(0, 7)}; merging it makes it the champion.`,
  ];
}
