// GitHub's REST contract for the operations perf-gate calls, from GitHub's published OpenAPI
// description (test/support/github-openapi.json, cut out of @octokit/openapi by
// scripts/openapi-fixture.mjs). The GitHub fake checks every request the action sends and every
// response it returns itself against it with a real JSON-Schema validator (ajv), so the fake can
// speak only what GitHub speaks.
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import fixture from "./github-openapi.json" with { type: "json" };

type Schema = Record<string, unknown>;

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required: boolean; schema: Schema }[];
  requestBody: { required: boolean; schema: Schema | null } | null;
  responses: Record<string, Schema | null>;
}

export interface MatchedOperation {
  id: string;
  params: Record<string, string>;
}

const operations = openApiNullables(structuredClone(fixture.operations)) as unknown as Record<string, Operation>;
export const CONTRACT_SOURCE = fixture.source;

// ajv-formats is CommonJS: its function is the default export's default under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (a: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ strict: false, allErrors: true, logger: false }));
const compiled = new WeakMap<Schema, ValidateFunction>();

function validate(schema: Schema, value: unknown): ErrorObject[] {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v(value) ? [] : (v.errors ?? []);
}

/** One line per problem, naming the field: `/output/summary must NOT have more than 65535 characters`. */
function describe(errors: ErrorObject[], value: unknown): string[] {
  // oneOf/anyOf report every branch; the branch errors carry the field names worth reading.
  const specific = errors.filter((e) => e.keyword !== "oneOf" && e.keyword !== "anyOf");
  return (specific.length > 0 ? specific : errors).slice(0, 8).map((e) => {
    const field = e.instancePath || "(the whole body)";
    const extra =
      e.keyword === "enum"
        ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.join(", ")}), got ${JSON.stringify(pick(value, e.instancePath))}`
        : e.keyword === "additionalProperties"
          ? `: ${(e.params as { additionalProperty: string }).additionalProperty}`
          : "";
    return `${field} ${e.message}${extra}`;
  });
}

function pick(value: unknown, pointer: string): unknown {
  return pointer
    .split("/")
    .slice(1)
    .reduce<unknown>(
      (o, k) =>
        o && typeof o === "object"
          ? (o as Record<string, unknown>)[k.replace(/~1/g, "/").replace(/~0/g, "~")]
          : undefined,
      value,
    );
}

const routes = Object.entries(operations).map(([id, op]) => {
  // A `path` parameter (a file's path in repos/get-content) spans segments; the others do not.
  const pattern = op.path
    .replace(/[.*+?^$()|[\]\\]/g, "\\$&")
    .replace(/\{([^}]+)\}/g, (_, name: string) => (name === "path" ? "(?<path>.+)" : `(?<${name}>[^/]+)`));
  const literals = op.path.split("/").filter((s) => s && !s.startsWith("{")).length;
  return { id, method: op.method, re: new RegExp(`^${pattern}$`), literals };
});

/** The operation a request is for, by method and path, with its decoded path parameters. */
export function matchOperation(method: string, pathname: string): MatchedOperation | null {
  const found = routes
    .filter((r) => r.method === method && r.re.test(pathname))
    .sort((a, b) => b.literals - a.literals)[0];
  if (!found) return null;
  const groups = found.re.exec(pathname)!.groups ?? {};
  return {
    id: found.id,
    params: Object.fromEntries(Object.entries(groups).map(([k, v]) => [k, decodeURIComponent(v)])),
  };
}

/**
 * OpenAPI 3.0's `nullable: true` says the value may also be null, which JSON Schema says
 * otherwise: beside an `enum` (a running check run's `conclusion` is null on GitHub), null
 * joins the enum; beside a `oneOf` with no type of its own (a commit's `author`, null when
 * no GitHub user made it), null becomes one more branch.
 */
function openApiNullables<T>(node: T): T {
  if (Array.isArray(node)) node.forEach(openApiNullables);
  else if (node && typeof node === "object") {
    const o = node as Record<string, unknown>;
    if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
    if (o.nullable === true && o.type === undefined && Array.isArray(o.oneOf)) {
      o.oneOf = [...o.oneOf, { type: "null" }];
      delete o.nullable;
    }
    Object.values(o).forEach(openApiNullables);
  }
  return node;
}

/** A parameter's text as the value its schema describes (query and path parameters are strings on the wire). */
function typed(schema: Schema, text: string): unknown {
  if (schema.type === "integer" || schema.type === "number") return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  if (schema.type === "boolean") return text === "true" ? true : text === "false" ? false : text;
  return text;
}

/** What is wrong with a request, by GitHub's description of the operation; empty when nothing is. */
export function checkRequest(m: MatchedOperation, query: URLSearchParams, body: unknown): string[] {
  const op = operations[m.id]!;
  const problems: string[] = [];
  for (const p of op.parameters) {
    const text = p.in === "path" ? m.params[p.name] : p.in === "query" ? query.get(p.name) : undefined;
    if (p.in !== "path" && p.in !== "query") continue;
    if (text === undefined || text === null) {
      if (p.required) problems.push(`${p.in} parameter ${p.name} is required`);
      continue;
    }
    for (const e of describe(validate(p.schema, typed(p.schema, text)), text))
      problems.push(`${p.in} parameter ${p.name}: ${e.replace("(the whole body) ", "")}`);
  }
  const known = new Set(op.parameters.filter((p) => p.in === "query").map((p) => p.name));
  for (const name of query.keys())
    if (!known.has(name)) problems.push(`query parameter ${name} is not a parameter of ${m.id}`);
  if (op.requestBody === null) {
    if (body !== undefined) problems.push("this operation takes no request body");
  } else if (body === undefined) {
    if (op.requestBody.required) problems.push("the request body is required");
  } else if (op.requestBody.schema) {
    problems.push(...describe(validate(op.requestBody.schema, body), body).map((e) => `request body ${e}`));
  }
  return problems.map((p) => `${m.id} (${op.method} ${op.path}): ${p}`);
}

/** What is wrong with a response the fake is about to send, by GitHub's description. */
export function checkResponse(id: string, status: number, body: unknown): string[] {
  const op = operations[id]!;
  const where = `${id} (${op.method} ${op.path}) response ${status}`;
  if (!(String(status) in op.responses)) {
    // GitHub documents the success statuses of every operation but not every error one; an
    // undocumented error must still be GitHub's error shape.
    if (
      status >= 400 &&
      body !== null &&
      typeof body === "object" &&
      typeof (body as { message?: unknown }).message === "string"
    )
      return [];
    return [`${where}: status ${status} is not a response of this operation (${Object.keys(op.responses).join(", ")})`];
  }
  const schema = op.responses[String(status)];
  if (!schema) return body === undefined ? [] : [`${where}: this response has no body in GitHub's description`];
  return describe(validate(schema, body), body).map((e) => `${where}: ${e}`);
}
