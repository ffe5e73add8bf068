// The shipped workflows and the repo's own (CI, release): actionlint, zizmor, SHA-pinned actions
// with their version named, least-privilege permissions, the key kept away from the jobs that run
// pull request code; the release built by the script the e2e test runs; shellcheck on the scripts.
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
// zizmor from PyPI, in a venv of its own under the git-ignored .tools/.
const zizmorVersion = "1.32.0";
const zizmor = join(tools, "zizmor/bin/zizmor");
const shipped = readdirSync(join(repoRoot, "workflows")).filter((f) => f.endsWith(".yml"));
const files = [
  ...shipped.map((f) => join("workflows", f)),
  ...readdirSync(join(repoRoot, ".github/workflows")).map((f) => join(".github/workflows", f)),
].filter((f) => f.endsWith(".yml"));

type Job = { permissions?: unknown; needs?: string; uses?: string; steps?: { uses?: string; run?: string; with?: Record<string, string> }[] };
type Workflow = { on: unknown; permissions?: unknown; jobs: Record<string, Job> };
const load = (file: string) => parse(readFileSync(join(repoRoot, file), "utf8")) as Workflow;

beforeAll(async () => {
  if (!existsSync(actionlint)) {
    await exec("go", ["install", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"], { env: { ...process.env, GOBIN: tools }, timeout: 600_000 });
  }
  const installed = existsSync(zizmor) && (await exec(zizmor, ["--version"])).stdout.trim() === `zizmor ${zizmorVersion}`;
  if (!installed) {
    await exec("python3", ["-m", "venv", "--clear", join(tools, "zizmor")]);
    await exec(join(tools, "zizmor/bin/pip"), ["install", "--quiet", "--disable-pip-version-check", `zizmor==${zizmorVersion}`], { timeout: 600_000 });
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

  it("pass zizmor, with action.yml and the dependabot config (offline audits; .github/zizmor.yml and ignore comments give each exception its reason)", async () => {
    const r = await exec(zizmor, ["--offline", "--no-progress", "--config", ".github/zizmor.yml", "--format", "plain", ...files, ".github/dependabot.yml", "action.yml"], { cwd: repoRoot })
      .catch((e) => e as { stdout: string; stderr: string; code: number });
    expect((r as { code?: number }).code ?? 0, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toContain("No findings to report");
  });

  it.each(files)("%s names the version of every action it pins by SHA", (file) => {
    for (const line of readFileSync(join(repoRoot, file), "utf8").split("\n")) {
      if (/uses: [\w.-]+\/[\w./-]+@[0-9a-f]{40}/.test(line)) expect(line, file).toMatch(/@[0-9a-f]{40} # v\d+\.\d+\.\d+$/);
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

describe("the release workflow", () => {
  const release = load(".github/workflows/release.yml");
  const runs = (job: string) => (release.jobs[job]?.steps ?? []).map((s) => s.run ?? "").join("\n");

  it("runs on version tags, with write access only where the release is made", () => {
    expect(release.on).toEqual({ push: { tags: ["v*.*.*"] } });
    expect(release.permissions).toEqual({});
    expect(release.jobs.test?.permissions).toEqual({ contents: "read" });
    expect(release.jobs.release?.permissions).toEqual({ contents: "write", "id-token": "write", attestations: "write" });
    expect(release.jobs.npm?.permissions).toEqual({ contents: "read", "id-token": "write" });
    expect([release.jobs.release?.needs, release.jobs.npm?.needs]).toEqual(["test", "release"]);
  });

  it("checks the tag, dist/ and the whole suite before it builds with the script the e2e test runs", () => {
    expect(runs("test")).toContain('node scripts/release-notes.mjs "$GITHUB_REF_NAME"');
    expect(runs("test")).toContain("npm run check:dist");
    expect(runs("test")).toContain("bash .ci/run");
    expect(runs("release")).toContain('bash benchmark-host/release.sh "$GITHUB_REF_NAME" release-assets');
    expect(runs("release")).toContain("gh release create");
    expect(runs("npm")).toContain("npm publish --provenance");
  });

  it("takes its notes from CHANGELOG.md, whose section for package.json's version exists", async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
    const notes = await exec(process.execPath, ["scripts/release-notes.mjs", `v${version}`], { cwd: repoRoot });
    expect(notes.stdout).toMatch(/^### Added$/m);
    const wrong = await exec(process.execPath, ["scripts/release-notes.mjs", "v0.0.1"], { cwd: repoRoot }).catch((e) => e as { stderr: string });
    expect(wrong.stderr).toBe(`release-notes: the tag v0.0.1 is not package.json's version ${version}: set it (npm version 0.0.1 --no-git-tag-version), npm run build, and commit\n`);
  });
});

describe("shell scripts", () => {
  it("pass shellcheck", async () => {
    const { stdout } = await exec("git", ["ls-files", "*.sh", ".ci/run"], { cwd: repoRoot });
    const scripts = stdout.trim().split("\n");
    expect(scripts).toEqual(expect.arrayContaining([".ci/run", "benchmark-host/install.sh", "benchmark-host/release.sh"]));
    const r = await exec("shellcheck", scripts, { cwd: repoRoot }).catch((e) => e as { stdout: string; code: number });
    expect(r.stdout, r.stdout).toBe("");
  });
});
