// The repository's gate configuration (.github/perf-gate.yml), read from the base branch so
// that a pull request cannot loosen its own gate. Errors name the key and its line.
import { isMap, LineCounter, parseDocument } from "yaml";
import { z } from "zod";

const name = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "1-64 characters of A-Z a-z 0-9 . _ -");

const request = z.strictObject({
  method: z.string().regex(/^[A-Za-z]+$/, "an HTTP method such as GET").default("GET"),
  path: z.string().startsWith("/", "must start with /"),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.string().optional(),
  weight: z.number().positive().default(1),
});

const rates = z.union([
  z.array(z.number().positive()).min(1),
  z.strictObject({ production_rps: z.number().positive(), multiples: z.array(z.number().positive()).min(1) }),
], { error: "a list of req/s, or { production_rps: N, multiples: [0.5, 1, 1.5] }" });

const workload = z.strictObject({
  name,
  rates,
  connections: z.number().int().min(1).max(1000).optional(),
  timeout_ms: z.number().int().min(1).max(60_000).optional(),
  requests: z.array(request).min(1),
});

export const configSchema = z.strictObject({
  service: z.strictObject({
    command: z.array(z.string().min(1)).min(1, "the start command, an argv list such as [./bin/server]"),
    env: z.record(z.string(), z.string()).optional(),
    health_path: z.string().startsWith("/").default("/health"),
    health_timeout_seconds: z.number().positive().max(600).default(30),
  }),
  workloads: z.array(workload).min(1),
  slo: z.strictObject({
    percentile: z.number().gt(0).lt(100).default(99),
    budget_ms: z.number().positive(),
  }),
  block_threshold_percent: z.number().nonnegative().default(1),
  slices: z
    .strictObject({
      seconds: z.number().positive().max(600).default(9),
      pairs: z.number().int().min(2).max(1000).default(10),
      order: z.enum(["alternate", "balanced"]).default("alternate"),
    })
    .default({ seconds: 9, pairs: 10, order: "alternate" }),
  warmup_seconds: z.number().nonnegative().max(3600).default(10),
  promotion: z
    .strictObject({
      /** Pairs of the short A/A run that verifies a new champion (first workload, first rate). */
      verify_pairs: z.number().int().min(2).max(100).default(4),
    })
    .default({ verify_pairs: 4 }),
});

export type GateConfig = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses and validates the YAML; `source` names the file in errors. */
export function parseConfig(text: string, source: string): GateConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const at = lines.linePos(e.pos[0]);
    throw new ConfigError(`${source}:${at.line}: not valid YAML: ${e.message.split("\n")[0]}`);
  }
  const parsed = configSchema.safeParse(doc.toJS());
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => `${source}:${lineOf(doc, lines, [...path, key], true)}: ${[...path, key].join(".")}: unknown key`).join("\n");
    }
    return `${source}:${lineOf(doc, lines, path, false)}: ${path.join(".") || "(top level)"}: ${issue.message}`;
  });
  throw new ConfigError(problems.join("\n"));
}

/** The line of the node at path, or of its nearest existing parent. */
function lineOf(doc: ReturnType<typeof parseDocument>, lines: LineCounter, path: string[], keyNode: boolean): number {
  for (let n = path.length; n > 0; n--) {
    const prefix = path.slice(0, n).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    if (keyNode && n === path.length) {
      const parent = doc.getIn(prefix.slice(0, -1), true);
      if (isMap(parent)) {
        const pair = parent.items.find((it) => String((it.key as { value?: unknown })?.value) === String(prefix.at(-1)));
        const range = (pair?.key as { range?: [number, number, number] })?.range;
        if (range) return lines.linePos(range[0]).line;
      }
      continue;
    }
    const node = doc.getIn(prefix, true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lines.linePos(node.range[0]).line;
  }
  return 1;
}

export interface PlannedRun {
  index: number;
  workload: string;
  rate: number;
  /** What perf-host `run` reads on stdin. */
  plan: {
    challenger_sha?: string;
    service: GateConfig["service"];
    loadgen: Record<string, unknown>;
  };
}

/** The config narrowed to one workload at one of its (resolved) rates. */
export function configFor(config: GateConfig, workload: string, rate: number): GateConfig {
  const w = config.workloads.find((x) => x.name === workload);
  if (!w) throw new Error(`no workload ${workload} in the config`);
  return { ...config, workloads: [{ ...w, rates: [rate] }] };
}

/** One run per workload and rate; rates given as multiples are resolved against production. */
export function planRuns(config: GateConfig, challengerSha: string | undefined, seed: number): PlannedRun[] {
  const runs: PlannedRun[] = [];
  for (const w of config.workloads) {
    const list = Array.isArray(w.rates) ? w.rates : w.rates.multiples.map((m) => Number((m * (w.rates as { production_rps: number }).production_rps).toFixed(3)));
    for (const rate of list) {
      runs.push({
        index: runs.length,
        workload: w.name,
        rate,
        plan: {
          ...(challengerSha ? { challenger_sha: challengerSha } : {}),
          service: config.service,
          loadgen: {
            workload: w.name,
            rate,
            slice_seconds: config.slices.seconds,
            pairs: config.slices.pairs,
            order: config.slices.order,
            seed,
            warmup_seconds: config.warmup_seconds,
            ...(w.connections ? { connections: w.connections } : {}),
            ...(w.timeout_ms ? { timeout_ms: w.timeout_ms } : {}),
            requests: w.requests,
          },
        },
      });
    }
  }
  return runs;
}
