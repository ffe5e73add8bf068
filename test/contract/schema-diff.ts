// Compares a zod schema (through z.toJSONSchema) with the JSON Schema Go generates for the same
// message: property names, required-ness, types, enums, constants, numeric and length bounds,
// patterns and defaults, recursively. Each difference is one line naming the message and field,
// e.g. "result.slices[].dispatch_lag_us: in Go's schema, missing from src/contract/result.ts".
// Descriptions, formats and whether unknown fields are allowed are not compared: the Go side
// reads strictly, the TypeScript side loosely, by design.
type Schema = Record<string, unknown>;

const COMPARED = [
  "type",
  "enum",
  "const",
  "pattern",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "minItems",
  "maxItems",
  "default",
] as const;

export function schemaDifferences(message: string, go: Schema, ts: Schema, tsFile: string): string[] {
  const out: string[] = [];
  compare(message, normalize(go), normalize(ts), tsFile, out);
  return out;
}

interface Normal {
  nullable: boolean;
  keywords: Partial<Record<(typeof COMPARED)[number], unknown>>;
  properties?: Record<string, Normal>;
  required?: Set<string>;
  items?: Normal;
  values?: Normal; // a map's values
}

function normalize(s: Schema): Normal {
  let nullable = false;
  const anyOf = s.anyOf as Schema[] | undefined;
  if (anyOf && anyOf.length === 2 && anyOf.some((x) => x.type === "null")) {
    nullable = true;
    s = anyOf.find((x) => x.type !== "null")!;
  }
  const keywords: Normal["keywords"] = {};
  for (const k of COMPARED) if (s[k] !== undefined) keywords[k] = s[k];
  if (typeof keywords.pattern === "string") keywords.pattern = keywords.pattern.replace(/\\\//g, "/"); // JavaScript's source escapes "/"
  if (Array.isArray(keywords.enum)) keywords.enum = [...keywords.enum].sort();
  if (keywords.const !== undefined) delete keywords.type; // a zod literal is a "number", Go's constant an "integer"
  const n: Normal = { nullable, keywords };
  if (s.properties) {
    n.properties = Object.fromEntries(
      Object.entries(s.properties as Record<string, Schema>).map(([k, v]) => [k, normalize(v)]),
    );
    n.required = new Set((s.required as string[] | undefined) ?? []);
  }
  const prefix = s.prefixItems as Schema[] | undefined;
  if (prefix && prefix.length > 0 && prefix.every((p) => JSON.stringify(p) === JSON.stringify(prefix[0]))) {
    n.items = normalize(prefix[0]!); // a tuple of one type is an array of fixed length
  } else if (s.items && typeof s.items === "object") {
    n.items = normalize(s.items as Schema);
  }
  if (
    s.additionalProperties &&
    typeof s.additionalProperties === "object" &&
    Object.keys(s.additionalProperties).length > 0
  ) {
    n.values = normalize(s.additionalProperties as Schema);
  }
  return n;
}

const SAFE = Number.MAX_SAFE_INTEGER;

function compare(path: string, go: Normal, ts: Normal, file: string, out: string[]): void {
  const here = `Go's schema`;
  // zod bounds every integer to JavaScript's safe range; Go's unbounded integers say nothing.
  if (go.keywords.minimum === undefined && ts.keywords.minimum === -SAFE) delete ts.keywords.minimum;
  if (go.keywords.maximum === undefined && ts.keywords.maximum === SAFE) delete ts.keywords.maximum;
  for (const k of COMPARED) {
    const [g, t] = [go.keywords[k], ts.keywords[k]];
    if (JSON.stringify(g) === JSON.stringify(t)) continue;
    const show = (v: unknown) => (v === undefined ? "none" : JSON.stringify(v));
    out.push(`${path}: ${k} ${show(g)} in ${here}, ${show(t)} in ${file}`);
  }
  if (go.nullable !== ts.nullable)
    out.push(
      `${path}: ${go.nullable ? "nullable" : "not nullable"} in ${here}, ${ts.nullable ? "nullable" : "not nullable"} in ${file}`,
    );
  if (go.properties || ts.properties) {
    const gp = go.properties ?? {};
    const tp = ts.properties ?? {};
    for (const key of new Set([...Object.keys(gp), ...Object.keys(tp)])) {
      const at = `${path}.${key}`;
      if (!(key in tp)) {
        out.push(`${at}: in ${here}, missing from ${file}`);
        continue;
      }
      if (!(key in gp)) {
        out.push(`${at}: in ${file}, missing from ${here}`);
        continue;
      }
      const [gr, tr] = [go.required!.has(key), ts.required!.has(key)];
      if (gr !== tr)
        out.push(`${at}: ${gr ? "required" : "optional"} in ${here}, ${tr ? "required" : "optional"} in ${file}`);
      compare(at, gp[key]!, tp[key]!, file, out);
    }
  }
  for (const [part, suffix] of [
    ["items", "[]"],
    ["values", ".*"],
  ] as const) {
    const [g, t] = [go[part], ts[part]];
    if (g && t) compare(`${path}${suffix}`, g, t, file, out);
    else if (g || t)
      out.push(
        `${path}${suffix}: ${g ? "described" : "not described"} in ${here}, ${t ? "described" : "not described"} in ${file}`,
      );
  }
}
