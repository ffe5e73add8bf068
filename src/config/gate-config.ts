// The repository's gate configuration (.github/perf-gate.yml), read from the base branch so
// that a pull request cannot loosen its own gate. Errors name the key and its line.
import { isMap, LineCounter, parseDocument, visit } from "yaml";
import { z } from "zod";
import {
  COMPARISON_BASES,
  grpcCallSchema,
  name,
  percentile,
  planSchema,
  type RunRequest,
  rate,
  requestSchema,
  serviceSchema,
} from "../contract/plan";
import { hostSetsEnv, sampleBudget, serviceArgError, serviceVariables } from "../contract/rules";
import { dependencyIssues, servicePortNames } from "./dependencies";
import { protoFileIssues } from "./proto-files";
import { requestIssues } from "./requests";

// The config's fields that become the plan's are the contract's own zod fields (src/contract,
// tested against Go's schemas), so their limits cannot drift from what the host accepts. Where
// the config is stricter than the wire, it says so.
const plan = planSchema.shape;
/** A slice's unrecorded start when the config leaves slices.discard_ms out (the plan's slice_warmup_ms default). */
const DEFAULT_DISCARD_MS = plan.slice_warmup_ms.parse(undefined);

// body_file is the load generator's, read on its own machine: a host refuses it.
// The wire's objects pass unknown keys on; the config's refuse them, the gRPC call's included.
const { body_file: _, ...requestFields } = requestSchema.shape;
const request = z.strictObject({ ...requestFields, grpc: z.strictObject(grpcCallSchema.shape).optional() });

const rates = z.union(
  [z.array(rate).min(1), z.strictObject({ production_rps: rate, multiples: z.array(z.number().positive()).min(1) })],
  { error: "a list of req/s, or { production_rps: N, multiples: [0.5, 1, 1.5] }" },
);

const workload = z
  .strictObject({
    name,
    rates,
    connections: plan.connections.unwrap().optional(),
    timeout_ms: plan.timeout_ms.unwrap().optional(),
    /** http1 (default) or grpc: unary gRPC calls, requests[].grpc (docs/design/0015-grpc-and-h2c.md). */
    protocol: plan.protocol,
    /** grpc: a FileDescriptorSet in the build (read from each arm's release); else server reflection. */
    proto_descriptor_set: plan.proto_descriptor_set,
    /** grpc: .proto files in the build, each relative to one of proto_import_paths (default: the build's root), compiled on the host. */
    proto_files: plan.proto_files,
    proto_import_paths: plan.proto_import_paths,
    requests: z.array(request).min(1),
  })
  .superRefine((w, ctx) => {
    // A grpc workload calls methods; an http1 one requests paths. Said here, with the line, not by the host.
    w.requests.forEach((r, i) => {
      for (const issue of requestIssues(r))
        ctx.addIssue({ code: "custom", path: ["requests", i, ...issue.path], message: issue.message });
      const first = w.requests.findIndex((x) => x.name !== undefined && x.name === r.name);
      if (first !== i && r.name !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["requests", i, "name"],
          message: `"${r.name}" names requests.${first} too: each request class needs a name of its own`,
        });
      if (w.protocol === "grpc" && !r.grpc)
        ctx.addIssue({
          code: "custom",
          path: ["requests", i, "grpc"],
          message: "required when protocol is grpc: { method: package.Service/Method, message: {…} }",
        });
      if (w.protocol === "grpc" && r.path !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["requests", i, "path"],
          message: "a gRPC call has no path; name it in grpc.method",
        });
      if (w.protocol !== "grpc" && r.grpc)
        ctx.addIssue({
          code: "custom",
          path: ["requests", i, "grpc"],
          message: "only a workload with protocol: grpc makes gRPC calls",
        });
      if (w.protocol !== "grpc" && r.path === undefined)
        ctx.addIssue({ code: "custom", path: ["requests", i, "path"], message: "required (a path starting with /)" });
    });
    if (w.proto_descriptor_set !== undefined && w.protocol !== "grpc")
      ctx.addIssue({
        code: "custom",
        path: ["proto_descriptor_set"],
        message: "only a grpc workload describes its methods",
      });
    for (const issue of protoFileIssues(w)) ctx.addIssue({ code: "custom", ...issue });
    // Multiples of the production rate must still be rates the host accepts.
    const seen = new Set<number>();
    for (const r of resolvedRates(w)) {
      const checked = rate.safeParse(r);
      if (!checked.success)
        ctx.addIssue({ code: "custom", path: ["rates"], message: `${r} req/s: ${checked.error.issues[0]!.message}` });
      if (seen.has(r)) ctx.addIssue({ code: "custom", path: ["rates"], message: `${r} req/s twice: each rate once` });
      seen.add(r);
    }
  });

// What the host refuses in a service (service.Validate), found here with the key's line:
// undeclared $PORT_<NAME>, names twice in ports, env that would shadow the host's variables,
// dependencies whose names clash or whose ready check names another's port.
const service = z.strictObject(serviceSchema.shape).superRefine((s, ctx) => {
  const vars = serviceVariables(servicePortNames(s));
  const clashes = dependencyIssues(s, vars);
  for (const issue of clashes) ctx.addIssue({ code: "custom", ...issue });
  if (clashes.length > 0) return; // the rest would only repeat them
  for (const field of ["command", "setup"] as const) {
    (s[field] ?? []).forEach((arg, i) => {
      const problem = serviceArgError(arg, vars);
      if (problem) ctx.addIssue({ code: "custom", path: [field, i], message: problem });
    });
  }
  if (s.setup?.[0] === "")
    ctx.addIssue({ code: "custom", path: ["setup", 0], message: "the program to run, such as ./bin/migrate" });
  s.ports?.forEach((p, i) => {
    if (s.ports!.indexOf(p) !== i)
      ctx.addIssue({ code: "custom", path: ["ports", i], message: `"${p}" is named twice` });
  });
  for (const [k, v] of Object.entries(s.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      ctx.addIssue({
        code: "custom",
        path: ["env", k],
        message: "must be a variable name: letters, digits and _, not starting with a digit",
      });
    else if (hostSetsEnv(k, s.port_env))
      ctx.addIssue({
        code: "custom",
        path: ["env", k],
        message: `set by the host (PATH, HOME, ${s.port_env}, PORT_<NAME> and STATE_DIR are the host's); name another variable`,
      });
    else if (serviceArgError(v, vars))
      ctx.addIssue({ code: "custom", path: ["env", k], message: serviceArgError(v, vars)! });
  }
});

export const PROFILE_MODES = ["on-red", "always", "never"] as const;

/** The most extensions a config may ask for: each is another 90 s of the host per workload and rate. */
const MAX_EXTENSIONS = 5;

export const configSchema = z.strictObject({
  service,
  workloads: z
    .array(workload)
    .min(1)
    .superRefine((ws, ctx) =>
      ws.forEach((w, i) => {
        if (ws.findIndex((o) => o.name === w.name) < i)
          ctx.addIssue({
            code: "custom",
            path: [i, "name"],
            message: `"${w.name}" names another workload: each name once`,
          });
      }),
    ),
  slo: z.strictObject({
    percentile: percentile.default(99),
    budget_ms: z.number().positive(),
  }),
  block_threshold_percent: z.number().nonnegative().default(1),
  /**
   * What a pull request is measured against: the host's champion (main's HEAD as last
   * promoted), or its merge base, which the workflow then builds too and the champion arm runs.
   */
  comparison_base: z.enum(COMPARISON_BASES).default("champion"),
  // Left out, slices are sized per rate (sliceDesign below); the order counterbalances the arms.
  slices: z
    .strictObject({
      seconds: plan.slice_seconds.optional(),
      // Stricter than the wire's 1: a verdict's interval needs at least two pairs.
      pairs: plan.pairs.min(2).optional(),
      order: plan.order.unwrap().default("abba"),
      /**
       * Further runs of the same size a gate measures by itself while its interval is unclear
       * (it holds ± the block threshold), each a further look (docs/design/0009-extending-gate.md).
       */
      max_extensions: z.number().int().min(0).max(MAX_EXTENSIONS).default(2),
      /**
       * The unrecorded start of every slice, in ms (the plan's slice_warmup_ms): the requests sent
       * while the arm just switched to wakes up are not recorded (docs/design/0012-slice-design.md).
       */
      discard_ms: plan.slice_warmup_ms.unwrap().optional(),
    })
    .refine((s) => s.seconds === undefined || s.discard_ms === undefined || s.discard_ms < s.seconds * 1000, {
      path: ["discard_ms"],
      message: "must be shorter than the slice (slices.seconds)",
    })
    // Left out, discard_ms is the plan's default: a slice no longer than it records nothing.
    .refine((s) => s.seconds === undefined || s.discard_ms !== undefined || DEFAULT_DISCARD_MS < s.seconds * 1000, {
      path: ["seconds"],
      message: `must be longer than the unrecorded start of every slice (slices.discard_ms, ${DEFAULT_DISCARD_MS} ms when left out): give more seconds, or a shorter discard_ms`,
    })
    .default({ order: "abba", max_extensions: 2 }),
  // The gate warms up for 10 s unless told otherwise; the wire's default is none.
  warmup_seconds: plan.warmup_seconds.unwrap().default(10),
  /** Gates on what the builds cost, from the host's per-slice accounting. */
  resources: z
    .strictObject({
      /** Block when CPU per request regresses past this percent over the whole interval. */
      block_cpu_percent: z.number().positive().max(1000).optional(),
    })
    .optional(),
  /**
   * The monthly regression budget (docs/design/0024-regression-budget.md): a red that would take
   * main's change over the trailing 30 days past this percent of its level blocks. Off unless set.
   */
  budget: z
    .strictObject({
      percent_per_30_days: z.number().gt(0).max(100),
    })
    .optional(),
  /**
   * Sample both arms' CPU stacks during every run and list the functions whose CPU per request
   * moved (docs/design/0021-profiles.md): on a red verdict (on-red), on every verdict (always),
   * or never (no sampling at all).
   */
  profile: z.enum(PROFILE_MODES).default("on-red"),
  promotion: z
    .strictObject({
      /** Pairs of the short A/A run that verifies a new champion (first workload, first rate); a check, so at most 100. */
      verify_pairs: plan.pairs.min(2).max(100).default(4),
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
  const parsed = configSchema.safeParse(plainValue(doc, lines, source));
  if (parsed.success) return parsed.data;
  // An unknown key first: a misspelt one (rps for rates) is why a required one is missing.
  const issues = [...parsed.error.issues].sort(
    (a, b) => Number(b.code === "unrecognized_keys") - Number(a.code === "unrecognized_keys"),
  );
  const problems = issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys
        .map((key) => `${source}:${lineOf(doc, lines, [...path, key], true)}: ${[...path, key].join(".")}: unknown key`)
        .join("\n");
    }
    return `${source}:${lineOf(doc, lines, path, false)}: ${path.join(".") || "(top level)"}: ${issue.message}`;
  });
  throw new ConfigError(problems.join("\n"));
}

/**
 * The document as plain values. yaml refuses, with a message that names no place, aliases that
 * expand past 100 times their size (a "billion laughs") and an alias of no anchor: say where.
 */
function plainValue(doc: ReturnType<typeof parseDocument>, lines: LineCounter, source: string): unknown {
  try {
    return doc.toJS();
  } catch (e) {
    const aliases: { name: string; line: number }[] = [];
    visit(doc, {
      Alias(_, node) {
        if (node.range) aliases.push({ name: node.source, line: lines.linePos(node.range[0]).line });
      },
    });
    const message = (e as Error).message;
    if (!/Excessive alias count/.test(message)) {
      // An alias of no anchor: the message ends with its name.
      const at = aliases.find((a) => message.endsWith(`: ${a.name}`)) ?? aliases[0];
      throw new ConfigError(`${source}:${at?.line ?? 1}: not valid YAML: ${message}`);
    }
    const names = [...new Set(aliases.map((a) => `*${a.name}`))].slice(0, 5).join(", ");
    throw new ConfigError(
      `${source}:${aliases[0]?.line ?? 1}: not valid YAML: ${message} (its aliases ${names} expand too far; write the values out)`,
    );
  }
}

/** The line of the node at path, or of its nearest existing parent. */
function lineOf(doc: ReturnType<typeof parseDocument>, lines: LineCounter, path: string[], keyNode: boolean): number {
  for (let n = path.length; n > 0; n--) {
    const prefix = path.slice(0, n).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    if (keyNode && n === path.length) {
      const parent = doc.getIn(prefix.slice(0, -1), true);
      if (isMap(parent)) {
        const pair = parent.items.find(
          (it) => String((it.key as { value?: unknown })?.value) === String(prefix.at(-1)),
        );
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
  /** What perf-host `run` (or `aa`) reads on stdin. */
  request: RunRequest;
}

/** The config narrowed to one workload at one of its (resolved) rates. */
export function configFor(config: GateConfig, workload: string, rate: number): GateConfig {
  const w = config.workloads.find((x) => x.name === workload);
  if (!w) throw new Error(`no workload ${workload} in the config`);
  return { ...config, workloads: [{ ...w, rates: [rate] }] };
}

/** A workload's rates in req/s: given, or multiples of the production rate. */
function resolvedRates(w: { rates: z.infer<typeof rates> }): number[] {
  const r = w.rates;
  return Array.isArray(r) ? r : r.multiples.map((m) => Number((m * r.production_rps).toFixed(3)));
}

/** The builds of a gate's runs: the challenger (none in an A/A run), and a merge base or an ancestor to run in the champion arm. */
export interface RunBuilds {
  challengerSha?: string;
  mergeBaseSha?: string;
  ancestorSha?: string;
}

/** Seconds of slices, both arms together, in one gate's run of a workload and rate: the mission's 90 s. */
export const GATE_MEASURED_SECONDS = 90;
/**
 * The shortest slice the defaults choose, the shortest the sensitivity benchmark measured (npm run
 * bench:sensitivity, docs/design/0012-slice-design.md): at the same 90 s, shorter slices and more
 * pairs were more sensitive, down to 0.5 s x 90 at 1,000 req/s.
 */
const MIN_DEFAULT_SLICE_SECONDS = 0.5;
/** The longest slice the defaults choose, for low rates: 5 pairs still make an interval. */
const MAX_DEFAULT_SLICE_SECONDS = 9;

/**
 * A run's slice length and pairs. What the config leaves out is chosen for the rate: each slice
 * long enough to record the sample budget of the SLO's percentile past its unrecorded start
 * (300 requests for p99), at least MIN_DEFAULT_SLICE_SECONDS, in quarter seconds; and as many
 * pairs as fill GATE_MEASURED_SECONDS. At 1,000 req/s and p99 that is 90 pairs of 0.5 s; at
 * 300 req/s, 36 pairs of 1.25 s.
 */
export function sliceDesign(config: GateConfig, rate: number): { seconds: number; pairs: number } {
  const needed = sampleBudget(config.slo.percentile) / rate + (config.slices.discard_ms ?? DEFAULT_DISCARD_MS) / 1000;
  const seconds =
    config.slices.seconds ??
    Math.min(
      MAX_DEFAULT_SLICE_SECONDS,
      Math.max(MIN_DEFAULT_SLICE_SECONDS, Math.ceil(Math.round(needed * 4 * 1e6) / 1e6) / 4),
    );
  const pairs = config.slices.pairs ?? Math.max(2, Math.round(GATE_MEASURED_SECONDS / (2 * seconds)));
  return { seconds, pairs };
}

/** One run per workload and rate. */
export function planRuns(config: GateConfig, builds: RunBuilds, seed: number): PlannedRun[] {
  const runs: PlannedRun[] = [];
  for (const w of config.workloads) {
    for (const rate of resolvedRates(w)) {
      const design = sliceDesign(config, rate);
      runs.push({
        index: runs.length,
        workload: w.name,
        rate,
        request: {
          ...(builds.challengerSha ? { challenger_sha: builds.challengerSha } : {}),
          ...(builds.mergeBaseSha ? { merge_base_sha: builds.mergeBaseSha } : {}),
          ...(builds.ancestorSha ? { ancestor_sha: builds.ancestorSha } : {}),
          service: config.service,
          ...(config.profile !== "never" ? { profile: true } : {}),
          loadgen: {
            workload: w.name,
            rate,
            slice_seconds: design.seconds,
            pairs: design.pairs,
            order: config.slices.order,
            ...(config.slices.discard_ms !== undefined ? { slice_warmup_ms: config.slices.discard_ms } : {}),
            seed,
            warmup_seconds: config.warmup_seconds,
            ...(w.connections ? { connections: w.connections } : {}),
            ...(w.timeout_ms ? { timeout_ms: w.timeout_ms } : {}),
            ...(w.protocol !== "http1" ? { protocol: w.protocol } : {}),
            ...(w.proto_descriptor_set ? { proto_descriptor_set: w.proto_descriptor_set } : {}),
            ...(w.proto_files ? { proto_files: w.proto_files } : {}),
            ...(w.proto_import_paths ? { proto_import_paths: w.proto_import_paths } : {}),
            requests: w.requests.map(({ method, ...r }) => (r.grpc ? r : { method, ...r })),
          },
        },
      });
    }
  }
  return runs;
}
