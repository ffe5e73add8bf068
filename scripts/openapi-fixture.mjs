// Regenerates test/support/github-openapi.json: the operations perf-gate calls, cut out of
// GitHub's published REST description (@octokit/openapi, generated/api.github.com.json) with
// every $ref resolved, so the GitHub fake in the tests can check each request and response
// against GitHub's own contract. The package is ~400 MB unpacked, so it is fetched on demand
// with `npm pack` into a temporary directory instead of being a dependency:
//
//   node scripts/openapi-fixture.mjs [--version 23.0.2]
//
// Add an operation id to OPERATIONS when the action starts calling a new endpoint.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

export const OPERATIONS = [
  "repos/get-content",
  "repos/get-collaborator-permission-level",
  "pulls/get",
  "repos/compare-commits-with-basehead",
  "repos/list-pull-requests-associated-with-commit",
  "checks/create",
  "checks/update",
  "checks/get",
  "checks/list-for-ref",
  "reactions/create-for-issue-comment",
  "issues/create-comment",
  "issues/list-comments",
  "issues/update-comment",
  "issues/list-labels-on-issue",
  "issues/add-labels",
  "issues/remove-label",
  "issues/get-label",
  "issues/create-label",
  "users/get-authenticated",
];

const DOCUMENTATION = new Set([
  "description",
  "example",
  "examples",
  "summary",
  "externalDocs",
  "x-github",
  "x-multi-segment",
  "discriminator",
]);

const { values } = parseArgs({
  options: {
    version: { type: "string", default: "23.0.2" },
    out: { type: "string", default: "test/support/github-openapi.json" },
  },
});
const version = values.version;
if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`--version: an exact version such as 23.0.2, got ${version}`);

const work = mkdtempSync(join(tmpdir(), "perf-gate-openapi-"));
try {
  execFileSync("npm", ["pack", `@octokit/openapi@${version}`, "--silent", "--pack-destination", work], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const tarball = join(work, `octokit-openapi-${version}.tgz`);
  execFileSync("tar", ["-xzf", tarball, "-C", work, "package/generated/api.github.com.json"]);
  const spec = JSON.parse(readFileSync(join(work, "package/generated/api.github.com.json"), "utf8"));
  writeFileSync(values.out, `${JSON.stringify(extract(spec, version), null, 1)}\n`);
  console.log(
    `${values.out}: ${OPERATIONS.length} operations from @octokit/openapi@${version} (${spec.info.title} ${spec.info.version})`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

function extract(spec, version) {
  const byId = new Map();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item))
      if (op?.operationId) byId.set(op.operationId, { method, path, op });
  }
  const operations = {};
  for (const id of OPERATIONS) {
    const found = byId.get(id);
    if (!found) throw new Error(`${id}: no such operation in @octokit/openapi@${version}`);
    const { method, path, op } = found;
    const resolved = resolve(spec, op, []);
    const json = (content) => content?.["application/json"]?.schema ?? null;
    operations[id] = {
      method: method.toUpperCase(),
      path,
      parameters: (resolved.parameters ?? []).map((p) => ({
        name: p.name,
        in: p.in,
        required: p.required === true,
        schema: p.schema,
      })),
      requestBody: resolved.requestBody
        ? { required: resolved.requestBody.required === true, schema: json(resolved.requestBody.content) }
        : null,
      responses: Object.fromEntries(Object.entries(resolved.responses).map(([status, r]) => [status, json(r.content)])),
    };
  }
  return {
    source: `@octokit/openapi@${version} generated/api.github.com.json`,
    openapi: spec.openapi,
    apiVersion: spec.info.version,
    operations,
  };
}

/** Inlines every $ref; documentation-only keys are dropped. A recursive schema would be an error here. */
function resolve(spec, node, stack, names = false) {
  if (Array.isArray(node)) return node.map((n) => resolve(spec, n, stack));
  if (node === null || typeof node !== "object") return node;
  if (typeof node.$ref === "string") {
    if (stack.includes(node.$ref)) throw new Error(`recursive $ref ${node.$ref} (via ${stack.join(" → ")})`);
    const target = node.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((o, k) => o[k.replace(/~1/g, "/").replace(/~0/g, "~")], spec);
    return resolve(spec, target, [...stack, node.$ref]);
  }
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    // Keys of `properties` (and the like) are field names, never documentation.
    if (!names && DOCUMENTATION.has(k)) continue;
    out[k] = resolve(spec, v, stack, ["properties", "patternProperties", "responses", "content"].includes(k));
  }
  return out;
}
