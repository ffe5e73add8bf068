// The contract between the halves: every zod schema in src/contract against the JSON Schema
// Go generates for the same message (benchmark-host/contract/schema, fresh by `npm test`).
// A field added, renamed, bounded or defaulted on one side only fails here, naming it.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configSchema } from "../../src/config/gate-config";
import { driftRecordSchema, gateRecordSchema, historySchema } from "../../src/contract/history";
import { floorRecordSchema, floorSchema, hostStatusSchema, runSummarySchema } from "../../src/contract/host";
import { planSchema, runRequestSchema, serviceSchema } from "../../src/contract/plan";
import { hostResultSchema, outcomeSchema, resultSchema, sliceSchema } from "../../src/contract/result";
import { repoRoot } from "../support/loadgen";
import { schemaDifferences } from "./schema-diff";

const schemaDir = join(repoRoot, "benchmark-host/contract/schema");

/** Every message of the contract: its zod schema and the file that defines it. */
const messages: Record<string, [z.ZodType, string]> = {
  plan: [planSchema, "src/contract/plan.ts"],
  "run-request": [runRequestSchema, "src/contract/plan.ts"],
  service: [serviceSchema, "src/contract/plan.ts"],
  result: [resultSchema, "src/contract/result.ts"],
  "host-result": [hostResultSchema, "src/contract/result.ts"],
  outcome: [outcomeSchema, "src/contract/result.ts"],
  "floor-record": [floorRecordSchema, "src/contract/host.ts"],
  floor: [floorSchema, "src/contract/host.ts"],
  "run-summary": [runSummarySchema, "src/contract/host.ts"],
  status: [hostStatusSchema, "src/contract/host.ts"],
  "gate-record": [gateRecordSchema, "src/contract/history.ts"],
  "drift-record": [driftRecordSchema, "src/contract/history.ts"],
  history: [historySchema, "src/contract/history.ts"],
};

const goSchema = (name: string) =>
  JSON.parse(readFileSync(join(schemaDir, `${name}.schema.json`), "utf8")) as Record<string, unknown>;
// Input semantics: a field with a default may be left out, as Go's omitempty fields may.
const tsSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input" }) as Record<string, unknown>;

describe("the contract", () => {
  it("has a zod schema for every message Go generates a schema for, and no other", () => {
    const generated = readdirSync(schemaDir)
      .filter((f) => f.endsWith(".schema.json"))
      .map((f) => f.replace(".schema.json", ""));
    expect(Object.keys(messages).sort()).toEqual(generated.sort());
  });

  for (const [name, [schema, file]] of Object.entries(messages)) {
    it(`${name}: the zod schema in ${file} matches Go's`, () => {
      const differences = schemaDifferences(name, goSchema(name), tsSchema(schema), file);
      expect(differences, differences.join("\n")).toEqual([]);
    });
  }
});

describe("the gate config", () => {
  type Props = Record<
    string,
    Record<string, unknown> & { properties?: Props; items?: Record<string, unknown> & { properties?: Props } }
  >;
  const config = tsSchema(configSchema) as { properties: Props };
  const plan = goSchema("plan").properties as Props;
  const bounds = (s: Record<string, unknown>) => ({
    type: s.type,
    min: s.minimum,
    exclusiveMin: s.exclusiveMinimum,
    max: s.maximum,
    pattern: (s.pattern as string | undefined)?.replace(/\\\//g, "/"),
  });

  it("has the plan's limits where its fields become the plan's, stricter only where it says why", () => {
    const slices = config.properties.slices!.properties!;
    const workload = config.properties.workloads!.items!.properties!;
    const request = workload.requests!.items!.properties!;
    expect(bounds(slices.seconds!)).toEqual(bounds(plan.slice_seconds!));
    expect(bounds(config.properties.warmup_seconds!)).toEqual(bounds(plan.warmup_seconds!));
    expect(bounds(workload.connections!)).toEqual(bounds(plan.connections!));
    expect(bounds(workload.timeout_ms!)).toEqual(bounds(plan.timeout_ms!));
    expect(bounds(workload.name!)).toEqual(bounds(plan.workload!));
    const planRequest = plan.requests!.items!.properties!;
    for (const field of ["method", "path", "weight"])
      expect(bounds(request[field]!), field).toEqual(bounds(planRequest[field]!));
    // A verdict's interval needs two pairs; the wire accepts one.
    expect(bounds(slices.pairs!)).toEqual({ ...bounds(plan.pairs!), min: 2 });
    expect(slices.order!.enum).toEqual(plan.order!.enum);
    const service = goSchema("service").properties as Props;
    const configService = config.properties.service!.properties!;
    for (const field of Object.keys(service))
      expect(bounds(configService[field]!), field).toEqual(bounds(service[field]!));
  });
});

describe("the comparator", () => {
  const diff = (name: string, schema: z.ZodType, file = "src/contract/result.ts") =>
    schemaDifferences(name, goSchema(name), tsSchema(schema), file);

  it("names a field renamed on one side, on both sides of the rename", () => {
    const { dispatch_lag_us, ...rest } = sliceSchema.shape;
    const renamed = resultSchema.extend({ slices: z.array(z.looseObject({ ...rest, dispatch_lag: dispatch_lag_us })) });
    expect(diff("result", renamed)).toEqual([
      "result.slices[].dispatch_lag_us: in Go's schema, missing from src/contract/result.ts",
      "result.slices[].dispatch_lag: in src/contract/result.ts, missing from Go's schema",
    ]);
  });

  it("names a bound, a pattern, an enum, a default, a type and required-ness that differ", () => {
    const { shape } = planSchema;
    const drifted = planSchema.extend({
      slice_seconds: z.number().positive().max(600),
      workload: z
        .string()
        .regex(/^[a-z]+$/)
        .default("default"),
      order: z.enum(["alternate", "random"]).default("alternate"),
      connections: z.number().int().min(1).max(1000).default(8),
      pairs: z.number().min(1).max(10_000),
      seed: shape.seed.unwrap(),
    });
    expect(diff("plan", drifted, "src/contract/plan.ts")).toEqual([
      `plan.workload: pattern "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$" in Go's schema, "^[a-z]+$" in src/contract/plan.ts`,
      `plan.slice_seconds: maximum 3600 in Go's schema, 600 in src/contract/plan.ts`,
      `plan.pairs: type "integer" in Go's schema, "number" in src/contract/plan.ts`,
      `plan.order: enum ["abba","alternate","balanced"] in Go's schema, ["alternate","random"] in src/contract/plan.ts`,
      `plan.seed: optional in Go's schema, required in src/contract/plan.ts`,
      `plan.connections: default 10 in Go's schema, 8 in src/contract/plan.ts`,
    ]);
  });

  it("names a field Go added that zod lacks, deep in a map", () => {
    const go = goSchema("status");
    const floors = (
      go.properties as Record<
        string,
        { additionalProperties: { properties: Record<string, unknown>; required: string[] } }
      >
    ).floors!;
    floors.additionalProperties.properties.drift_ms = { type: "number" };
    floors.additionalProperties.required.push("drift_ms");
    expect(schemaDifferences("status", go, tsSchema(hostStatusSchema), "src/contract/host.ts")).toEqual([
      "status.floors.*.drift_ms: in Go's schema, missing from src/contract/host.ts",
    ]);
  });
});
