// The shipped workflows and the repo's own CI workflow: actionlint, SHA-pinned actions, and
// least-privilege permissions.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repoRoot } from "../support/loadgen";

const exec = promisify(execFile);
const tools = join(repoRoot, ".tools");
const actionlint = join(tools, "actionlint");
const files = [
  ...readdirSync(join(repoRoot, "workflows")).map((f) => join("workflows", f)),
  ...readdirSync(join(repoRoot, ".github/workflows")).map((f) => join(".github/workflows", f)),
].filter((f) => f.endsWith(".yml"));

beforeAll(async () => {
  if (!existsSync(actionlint)) {
    await exec("go", ["install", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"], { env: { ...process.env, GOBIN: tools }, timeout: 600_000 });
  }
});

describe("workflows", () => {
  it("pass actionlint", async () => {
    expect(files.length).toBeGreaterThanOrEqual(2);
    const r = await exec(actionlint, ["-color=false", ...files], { cwd: repoRoot }).catch((e) => e as { stdout: string; code: number });
    expect((r as { stdout: string }).stdout, (r as { stdout: string }).stdout).toBe("");
  });

  it.each(files)("%s pins every third-party action by commit SHA and declares permissions per job", (file) => {
    const wf = parse(readFileSync(join(repoRoot, file), "utf8")) as { permissions?: unknown; jobs: Record<string, { permissions?: unknown; steps: { uses?: string }[] }> };
    expect(wf.permissions, "top-level permissions").toBeDefined();
    for (const [name, job] of Object.entries(wf.jobs)) {
      if (wf.permissions !== undefined && JSON.stringify(wf.permissions) === "{}") expect(job.permissions, `job ${name} permissions`).toBeDefined();
      expect(JSON.stringify(job.permissions ?? {})).not.toContain("write-all");
      for (const { uses } of job.steps) {
        if (!uses || uses.startsWith("./") || uses.startsWith("perf-gate/perf-gate@")) continue;
        expect(uses, `${file} job ${name}`).toMatch(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/);
      }
    }
  });
});
