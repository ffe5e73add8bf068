// Lines a report carries after its headline about its evidence: reruns pooled, earlier runs
// left out, a candidate champion. Pure.
import type { Analysis } from "../analysis/verdict";

const runs = (n: number) => `${n} earlier run${n === 1 ? "" : "s"}`;

export function evidenceNotes(sha: string, e: { pooled: string[]; otherChampion: string[]; otherProtocol: string[] }): string[] {
  const short = sha.slice(0, 7);
  const out: string[] = [];
  if (e.pooled.length > 0) {
    out.push(`🔁 **Rerun**: pooled with ${runs(e.pooled.length)} of ${short} (${e.pooled.join(", ")}); the interval is at the lower confidence each further look needs.`);
  }
  if (e.otherChampion.length > 0) {
    out.push(`${runs(e.otherChampion.length)} of ${short} (${e.otherChampion.join(", ")}) measured another champion and ${e.otherChampion.length === 1 ? "is" : "are"} not pooled.`);
  }
  if (e.otherProtocol.length > 0) {
    out.push(`${runs(e.otherProtocol.length)} of ${short} (${e.otherProtocol.join(", ")}) measured the workload another way (its requests, slices, warm-up or connections differ) and ${e.otherProtocol.length === 1 ? "is" : "are"} not pooled.`);
  }
  return out;
}

/** A green challenger is a candidate champion: merging it makes it the champion. */
export function candidateNote(a: Analysis, sha: string, champion: string): string[] {
  // Faster than its merge base says nothing about the champion, which main may have moved past.
  if (a.verdict !== "green" || a.builds?.base === "merge-base") return [];
  return [`🏆 **Candidate champion**: ${sha.slice(0, 7)} is faster than the champion ${champion.slice(0, 7)}; merging it makes it the champion.`];
}
