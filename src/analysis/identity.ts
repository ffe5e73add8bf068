// A run's identity (the builds as deployed, each arm's service spec, the placement, the
// generator's settings): only runs of one identity are evidence about the same comparison and
// may pool (docs/design/0003-run-identity.md). Pure.
import type { HostResult, Identity, LoadgenResult } from "../contract/result";

/**
 * What differs between the identities of two runs of one workload and rate (empty: one
 * identity, so they pool; the number of pairs may differ, pooling adds them up). A run without
 * an identity (a host before it) cannot be vouched for and differs in everything.
 */
export function identityDifferences(a: LoadgenResult, b: LoadgenResult): string[] {
  const [x, y] = [identityOf(a), identityOf(b)];
  if (!x || !y) return ["its identity (a host that did not record one)"];
  if (x.digest === y.digest) return [];
  const parts: [string, (i: Identity) => string][] = [
    ["the champion's build", (i) => `${i.champion.sha} ${i.champion.build}`],
    ["the challenger's build", (i) => `${i.challenger.sha} ${i.challenger.build}`],
    ["the champion's service spec", (i) => i.champion.service],
    ["the challenger's service spec", (i) => i.challenger.service],
    ["the CPU placement", (i) => i.placement],
    ["the load generator's settings (requests, slices, warm-up, connections or its version)", (i) => i.generator],
  ];
  const differs = parts.filter(([, of]) => of(x) !== of(y)).map(([what]) => what);
  return differs.length > 0 ? differs : ["its identity"];
}

export const identityOf = (r: LoadgenResult): Identity | undefined => (r as Partial<HostResult>).identity;
