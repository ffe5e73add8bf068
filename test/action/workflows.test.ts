// The shipped workflows and the repo's own CI workflow: actionlint, SHA-pinned actions,
// least-privilege permissions, and the key kept away from the jobs that run pull request code.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repoRoot } from "../support/loadgen";

const exec = promisify(execFile);
const tools = join(repoRoot, ".tools");
const actionlint = join(tools, "actionlint");
const shipped = readdirSync(join(repoRoot, "workflows")).filter((f) => f.endsWith(".yml"));
const files = [
  ...shipped.map((f) => join("workflows", f)),
  ...readdirSync(join(repoRoot, ".github/workflows")).map((f) => join(".github/workflows", f)),
].filter((f) => f.endsWith(".yml"));

type Job = { permissions?: unknown; uses?: string; steps?: { uses?: string; with?: Record<string, string> }[] };
const load = (file: string) => parse(readFileSync(join(repoRoot, file), "utf8")) as { permissions?: unknown; jobs: Record<string, Job> };

beforeAll(async () => {
  if (!existsSync(actionlint)) {
    await exec("go", ["install", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"], { env: { ...process.env, GOBIN: tools }, timeout: 600_000 });
  }
});

describe("workflows", () => {
  it("pass actionlint, the shipped ones as installed in a repository (so calls to perf-gate-build.yml are checked)", async () => {
    expect(shipped).toEqual(expect.arrayContaining(["perf-gate.yml", "perf-gate-build.yml", "perf-rerun.yml", "perf-promote.yml", "perf-calibrate.yml"]));
    const installed = mkdtempSync(join(tmpdir(), "perf-gate-installed-"));
    mkdirSync(join(installed, ".github/workflows"), { recursive: true });
    mkdirSync(join(installed, ".git")); // actionlint resolves ./.github/workflows/… from the repository root
    for (const f of shipped) copyFileSync(join(repoRoot, "workflows", f), join(installed, ".github/workflows", f));
    for (const [cwd, list] of [[installed, shipped.map((f) => join(".github/workflows", f))], [repoRoot, files.filter((f) => f.startsWith(".github"))]] as const) {
      const r = await exec(actionlint, ["-color=false", ...list], { cwd }).catch((e) => e as { stdout: string; code: number });
      expect((r as { stdout: string }).stdout, (r as { stdout: string }).stdout).toBe("");
    }
  });

  it.each(files)("%s pins every third-party action by commit SHA and declares permissions per job", (file) => {
    const wf = load(file);
    expect(wf.permissions, "top-level permissions").toBeDefined();
    for (const [name, job] of Object.entries(wf.jobs)) {
      if (wf.permissions !== undefined && JSON.stringify(wf.permissions) === "{}") expect(job.permissions, `job ${name} permissions`).toBeDefined();
      expect(JSON.stringify(job.permissions ?? {})).not.toContain("write-all");
      if (job.uses) expect(job.uses, `${file} job ${name}`).toMatch(/^\.\/\.github\/workflows\/[\w.-]+\.yml$/);
      for (const { uses } of job.steps ?? []) {
        if (!uses || uses.startsWith("./") || uses.startsWith("perf-gate/perf-gate@")) continue;
        expect(uses, `${file} job ${name}`).toMatch(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/);
      }
    }
  });

  it.each(shipped)("%s: a job that holds the host key never checks out code, and one that checks out holds no secret", (file) => {
    for (const [name, job] of Object.entries(load(join("workflows", file)).jobs)) {
      const text = JSON.stringify(job);
      const checksOut = (job.steps ?? []).some((s) => s.uses?.startsWith("actions/checkout@"));
      if (checksOut) expect(text, `${file} job ${name}`).not.toMatch(/secrets\./);
      if (text.includes("secrets.PERF_GATE_SSH_KEY")) expect(checksOut || job.uses !== undefined, `${file} job ${name}`).toBe(false);
    }
  });
});
