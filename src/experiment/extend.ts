// A gate that extends itself: measure, decide, and while a comparison's interval is unclear
// (src/analysis/extension.ts), run it again, the same workload and rate, and decide on all of it.
// Each extension is a run pooled like a /perf rerun, so the verdict engine judges it as a further
// look. Shared by the action's gate and `perf-gate run`.
import { blocksLeft, extensionWanted } from "../analysis/extension";
import { CouldNotMeasureError } from "../analysis/unmeasured";
import type { Analysis } from "../analysis/verdict";
import { configFor, type GateConfig } from "../config/gate-config";
import type { HostStatus } from "../contract/host";
import type { BenchmarkHost } from "../host/client";
import { decide } from "./decide";
import { type Evidence, type Measurement, measure } from "./measure";

export interface Judgement {
  evidence: Evidence;
  analysis: Analysis;
  status: HostStatus;
}

/**
 * Measures a gate, pooled with the build's earlier runs, decides against the host's floors, and
 * extends unclear comparisons up to slices.max_extensions times. `keep` gets every result
 * document so far before each decision: a run that cannot be judged is still evidence.
 */
export async function measureAndDecide(
  host: BenchmarkHost,
  config: GateConfig,
  m: Measurement,
  keep: (documents: unknown[]) => void,
): Promise<Judgement> {
  let evidence = await measure(host, config, m);
  keep(evidence.documents);
  const status = await host.status();
  const judge = () => decide(evidence.results, config, { seed: m.seed, floors: status.floors });
  let analysis = judge();
  const max = config.slices.max_extensions;
  for (let extension = 1; extension <= max; extension++) {
    const wanted = analysis.comparisons.filter((c) =>
      extensionWanted(c, 1 - analysis.settings.confidence, blocksLeft(max, extension - 1, c.looks)),
    );
    if (wanted.length === 0) break;
    const before = evidence;
    for (const [i, c] of wanted.entries()) {
      m.progress.note(
        `${c.key}: the interval [${c.ciMs.map((x) => x.toFixed(3)).join(", ")}] ms holds the block threshold ±${c.thresholdMs.toFixed(3)} ms: extension ${extension} of ${max}`,
      );
      const more = await measure(host, configFor(config, c.workload, c.rate), {
        ...m,
        // Deployed already; a further run of the same builds.
        challenger: m.challenger && { sha: m.challenger.sha },
        mergeBase: m.mergeBase && { sha: m.mergeBase.sha },
        runIdPrefix: `${m.runIdPrefix}-x${extension}c${i}`,
        // New requests: the same seed would replay the first run's draws, and their sampling error with them.
        seed: m.seed + extension,
        pool: false,
      });
      evidence = {
        ...evidence,
        results: [...evidence.results, ...more.results],
        documents: [...evidence.documents, ...more.documents],
      };
    }
    keep(evidence.documents);
    try {
      analysis = judge();
    } catch (e) {
      // An extension the host could not measure (most of the pooled pairs disturbed) must not
      // take away the verdict the looks before it gave: that verdict stands, and says so.
      if (!(e instanceof CouldNotMeasureError)) throw e;
      m.progress.note(
        `extension ${extension} could not be judged (${e.brief}); the verdict stands on the looks before it`,
      );
      evidence = before;
      break;
    }
  }
  return { evidence, analysis, status };
}
