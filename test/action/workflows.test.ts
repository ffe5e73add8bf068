// The shipped workflows and the repo's own (CI, release): actionlint, zizmor, SHA-pinned actions
// with their version named (on node24 majors), least-privilege permissions, the key kept away from
// the jobs that run pull request code; the release built by the script the e2e test runs;
// shellcheck on the scripts; concurrency (evaluated by GitHub's own expression engine for real
// webhook payloads); and the action's cancel path: the post step and the main step's signal
// handler (the bundle under Node 24).
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { poolOf } from "../../src/action/inputs";
import { examplePayload, GitHubHarness, REPOSITORY } from "../support/action-harness";
import { GITHUB_ACTIONS } from "../support/github-fake";
import { repoRoot } from "../support/loadgen";
import { scratchDir } from "../support/scratch";
import { type Contexts, condition, render } from "../support/workflow-expressions";

const exec = promisify(execFile);

/** The pinned actions: their current node24 majors, each at its release tag's commit (checked against the actions' repositories). */
const NODE24_PINS: Record<string, string> = {
  "actions/checkout": "3d3c42e5aac5ba805825da76410c181273ba90b1 v7.0.1",
  "actions/setup-go": "b7ad1dad31e06c5925ef5d2fc7ad053ef454303e v7.0.0",
  "actions/upload-artifact": "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f v7.0.0",
  "actions/download-artifact": "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c v8.0.1",
  "actions/attest": "1e69f48acb82d1966a394da916b4c1698aa569d6 v4.2.2",
  "actions/setup-node": "820762786026740c76f36085b0efc47a31fe5020 v7.0.0",
};
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

type Concurrency = { group: string; "cancel-in-progress": boolean };
type Job = {
  permissions?: unknown;
  uses?: string;
  if?: string;
  needs?: string | string[];
  concurrency?: Concurrency;
  steps?: { uses?: string; run?: string; with?: Record<string, string> }[];
};
type Workflow = { on: unknown; permissions?: unknown; concurrency?: Concurrency; jobs: Record<string, Job> };
const load = (file: string) => parse(readFileSync(join(repoRoot, file), "utf8")) as Workflow;

beforeAll(async () => {
  if (!existsSync(actionlint)) {
    await exec("go", ["install", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"], {
      env: { ...process.env, GOBIN: tools },
      timeout: 600_000,
    });
  }
  const installed =
    existsSync(zizmor) && (await exec(zizmor, ["--version"])).stdout.trim() === `zizmor ${zizmorVersion}`;
  if (!installed) {
    await exec("python3", ["-m", "venv", "--clear", join(tools, "zizmor")]);
    await exec(
      join(tools, "zizmor/bin/pip"),
      ["install", "--quiet", "--disable-pip-version-check", `zizmor==${zizmorVersion}`],
      { timeout: 600_000 },
    );
  }
});

describe("workflows", () => {
  it("pass actionlint, the shipped ones as installed in a repository (so calls to perf-gate-build.yml are checked)", async () => {
    expect(shipped).toEqual(
      expect.arrayContaining([
        "perf-gate.yml",
        "perf-gate-build.yml",
        "perf-rerun.yml",
        "perf-promote.yml",
        "perf-calibrate.yml",
      ]),
    );
    const installed = scratchDir("installed");
    mkdirSync(join(installed, ".github/workflows"), { recursive: true });
    mkdirSync(join(installed, ".git")); // actionlint resolves ./.github/workflows/… from the repository root
    for (const f of shipped) copyFileSync(join(repoRoot, "workflows", f), join(installed, ".github/workflows", f));
    for (const [cwd, list] of [
      [installed, shipped.map((f) => join(".github/workflows", f))],
      [repoRoot, files.filter((f) => f.startsWith(".github"))],
    ] as const) {
      const r = await exec(actionlint, ["-color=false", ...list], { cwd }).catch(
        (e) => e as { stdout: string; code: number },
      );
      expect((r as { stdout: string }).stdout, (r as { stdout: string }).stdout).toBe("");
    }
  });

  it("pass zizmor, with action.yml and the dependabot config (offline audits; .github/zizmor.yml and ignore comments give each exception its reason)", async () => {
    const r = await exec(
      zizmor,
      [
        "--offline",
        "--no-progress",
        "--config",
        ".github/zizmor.yml",
        "--format",
        "plain",
        ...files,
        ".github/dependabot.yml",
        "action.yml",
      ],
      { cwd: repoRoot },
    ).catch((e) => e as { stdout: string; stderr: string; code: number });
    expect((r as { code?: number }).code ?? 0, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toContain("No findings to report");
  });

  it.each(files)("%s names the version of every action it pins by SHA", (file) => {
    for (const line of readFileSync(join(repoRoot, file), "utf8").split("\n")) {
      if (/uses: [\w.-]+\/[\w./-]+@[0-9a-f]{40}/.test(line))
        expect(line, file).toMatch(/@[0-9a-f]{40} # v\d+\.\d+\.\d+$/);
    }
  });

  it.each(files)("%s pins every third-party action by commit SHA and declares permissions per job", (file) => {
    const wf = load(file);
    expect(wf.permissions, "top-level permissions").toBeDefined();
    for (const [name, job] of Object.entries(wf.jobs)) {
      if (wf.permissions !== undefined && JSON.stringify(wf.permissions) === "{}")
        expect(job.permissions, `job ${name} permissions`).toBeDefined();
      expect(JSON.stringify(job.permissions ?? {})).not.toContain("write-all");
      if (job.uses) expect(job.uses, `${file} job ${name}`).toMatch(/^\.\/\.github\/workflows\/[\w.-]+\.yml$/);
      for (const { uses } of job.steps ?? []) {
        if (!uses || uses.startsWith("./") || uses.startsWith("perf-gate/perf-gate@")) continue;
        expect(uses, `${file} job ${name}`).toMatch(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40}$/);
      }
    }
    // Runners dropped node20: each action on the major that runs on node24, at its tag's commit.
    const text = readFileSync(join(repoRoot, file), "utf8");
    for (const [, action, sha, version] of text.matchAll(/uses: ([\w.-]+\/[\w.-]+)@([0-9a-f]{40}) # (v[\d.]+)/g)) {
      expect(NODE24_PINS[action!], `${file}: ${action} is not one of the pinned node24 actions`).toBeDefined();
      expect(`${sha} ${version}`, `${file}: ${action}`).toBe(NODE24_PINS[action!]);
    }
  });

  it.each(shipped)(
    "%s: a job that holds the host key never checks out code, and one that checks out holds no secret",
    (file) => {
      for (const [name, job] of Object.entries(load(join("workflows", file)).jobs)) {
        const text = JSON.stringify(job);
        const checksOut = (job.steps ?? []).some((s) => s.uses?.startsWith("actions/checkout@"));
        if (checksOut) expect(text, `${file} job ${name}`).not.toMatch(/secrets\./);
        if (text.includes("secrets.PERF_GATE_SSH_KEY"))
          expect(checksOut || job.uses !== undefined, `${file} job ${name}`).toBe(false);
      }
    },
  );
});

describe("the release workflow", () => {
  const release = load(".github/workflows/release.yml");
  const runs = (job: string) => (release.jobs[job]?.steps ?? []).map((s) => s.run ?? "").join("\n");

  it("runs on version tags, with write access only where the release is made", () => {
    expect(release.on).toEqual({ push: { tags: ["v*.*.*"] } });
    expect(release.permissions).toEqual({});
    expect(release.jobs.test?.permissions).toEqual({ contents: "read" });
    expect(release.jobs.release?.permissions).toEqual({
      contents: "write",
      "id-token": "write",
      attestations: "write",
    });
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
    const wrong = await exec(process.execPath, ["scripts/release-notes.mjs", "v0.0.1"], { cwd: repoRoot }).catch(
      (e) => e as { stderr: string },
    );
    expect(wrong.stderr).toBe(
      `release-notes: the tag v0.0.1 is not package.json's version ${version}: set it (npm version 0.0.1 --no-git-tag-version), npm run build, and commit\n`,
    );
  });
});

describe("shell scripts", () => {
  it("pass shellcheck", async () => {
    const { stdout } = await exec("git", ["ls-files", "*.sh", ".ci/run"], { cwd: repoRoot });
    const scripts = stdout.trim().split("\n");
    expect(scripts).toEqual(
      expect.arrayContaining([".ci/run", "benchmark-host/install.sh", "benchmark-host/release.sh"]),
    );
    const r = await exec("shellcheck", scripts, { cwd: repoRoot }).catch((e) => e as { stdout: string; code: number });
    expect(r.stdout, r.stdout).toBe("");
  });
});

type PrPayload = {
  action: string;
  number: number;
  pull_request: { number: number; head: { sha: string; repo: { full_name: string } | null } };
  label?: { name: string };
  repository: { full_name: string };
};

/** The github and vars contexts of a pull_request_target run, from a real webhook payload. */
function prRun(action: string, o: { fork?: boolean; label?: string; runId: number }): Contexts {
  const p = examplePayload<PrPayload>(
    "pull_request",
    (e) => e.action === (action === "labeled" ? "labeled" : "opened"),
  );
  p.action = action;
  if (o.fork) p.pull_request.head.repo = { ...p.pull_request.head.repo!, full_name: "forker/Hello-World" };
  if (o.label) p.label = { ...p.label!, name: o.label };
  return {
    github: { event: p, event_name: "pull_request_target", repository: p.repository.full_name, run_id: o.runId },
    vars: { PERF_GATE_HOST: "bench-1.example.com" },
  };
}

describe("perf-gate.yml concurrency", () => {
  const wf = load("workflows/perf-gate.yml");
  let runId = 9000;
  /** What GitHub does with a run of this event: its concurrency group, and which jobs can run. */
  const plan = (action: string, o: { fork?: boolean; label?: string } = {}) => {
    const ctx = prRun(action, { ...o, runId: runId++ });
    const access = condition(wf.jobs.access!.if!, ctx);
    return { group: render(wf.concurrency!.group, ctx), access };
  };

  it("cancels the running gate of a pull request for a new push or an approval only", () => {
    expect(wf.concurrency!["cancel-in-progress"]).toBe(true);
    const gate = "perf-gate-bench-1.example.com-pr-2";
    for (const [action, o] of [
      ["opened", {}],
      ["synchronize", {}],
      ["reopened", {}],
      ["synchronize", { fork: true }],
      ["labeled", { fork: true, label: "perf:approved" }],
      ["labeled", { fork: true, label: "Perf:Approved" }],
    ] as const) {
      expect(plan(action, o), `${action} ${JSON.stringify(o)}`).toEqual({ group: gate, access: true });
    }
  });

  it("a label that decides nothing neither cancels a running gate nor starts a run that replaces it", () => {
    const seen = new Set<string>();
    for (const o of [
      { label: "bug" },
      { fork: true, label: "bug" },
      { label: "perf:approved" },
      { fork: true, label: "perf:red" },
    ]) {
      const p = plan("labeled", o);
      expect(p.access, JSON.stringify(o)).toBe(false); // build needs access, gate needs build: nothing runs
      expect(p.group).toMatch(/^perf-gate-bench-1\.example\.com-pr-2-label-\d+$/); // a group of its own
      seen.add(p.group);
    }
    expect(seen.size).toBe(4);
    // Nothing after the access job runs unless it said yes.
    expect(wf.jobs.build!.if).toBe("needs.access.outputs.allowed == 'true'");
    expect(condition(wf.jobs.build!.if!, { needs: { access: { outputs: { allowed: "" } } } })).toBe(false);
    expect(
      condition(wf.jobs["build-base"]!.if!, {
        needs: { access: { outputs: { allowed: "", "merge-base-sha": "a".repeat(40) } } },
      }),
    ).toBe(false);
  });

  it("the gate runs only after a head build that succeeded, and a merge-base build that succeeded or was not asked for, in a run not cancelled", () => {
    for (const file of ["workflows/perf-gate.yml", "workflows/perf-rerun.yml"]) {
      const gate = load(file).jobs.gate!;
      expect(gate.needs, file).toEqual(expect.arrayContaining(["build", "build-base"]));
      const runs = (build: string, buildBase: string, cancelled = false) =>
        condition(
          gate.if!,
          { needs: { build: { result: build }, "build-base": { result: buildBase } } },
          { cancelled },
        );
      expect(runs("success", "skipped"), file).toBe(true); // comparison_base champion
      expect(runs("success", "success"), file).toBe(true); // comparison_base merge-base
      expect(runs("skipped", "skipped"), file).toBe(false); // access said no: nothing was built
      for (const [build, base] of [
        ["success", "failure"],
        ["success", "cancelled"],
        ["failure", "success"],
        ["cancelled", "skipped"],
      ]) {
        expect(runs(build!, base!), `${file}: build ${build}, build-base ${base}`).toBe(false);
      }
      expect(runs("success", "skipped", true), `${file}: a superseded (cancelled) run`).toBe(false);
    }
  });

  it("a /perf rerun queues in the same group as the gate of its pull request", () => {
    const rerun = load("workflows/perf-rerun.yml").jobs.gate!.concurrency!;
    const p = examplePayload<{ issue: { number: number } }>("issue_comment");
    p.issue.number = 2;
    const ctx = { github: { event: p, event_name: "issue_comment" }, vars: { PERF_GATE_HOST: "bench-1.example.com" } };
    expect(render(rerun.group, ctx)).toBe(plan("synchronize").group);
    expect(rerun["cancel-in-progress"]).toBe(false);
  });
});

describe("a pool of hosts in the shipped workflows", () => {
  const vars = {
    PERF_GATE_HOST: "bench-1.example.com, bench-2.example.com, perf-ci@bench-3.example.com:2222",
    PERF_GATE_KNOWN_HOSTS:
      "bench-1.example.com ssh-ed25519 AAAA1\nbench-2.example.com ssh-ed25519 AAAA2\n[bench-3.example.com]:2222 ssh-ed25519 AAAA3",
  };
  const steps = shipped.flatMap((f) =>
    Object.entries(load(join("workflows", f)).jobs).flatMap(([job, j]) =>
      (j.steps ?? [])
        .filter((s) => s.uses?.startsWith("perf-gate/perf-gate@") && s.with?.host)
        .map((s) => ({ where: `${f} ${job}`, with: s.with! })),
    ),
  );

  it("every step that talks to the hosts gives the action the whole pool, each host pinned", () => {
    expect(steps.map((s) => s.where).sort()).toEqual([
      "perf-calibrate.yml calibrate",
      "perf-gate.yml gate",
      "perf-promote.yml promote",
      "perf-promote.yml rollback",
      "perf-rerun.yml gate",
    ]);
    for (const s of steps) {
      const ctx = { vars, secrets: { PERF_GATE_SSH_KEY: "-----BEGIN OPENSSH PRIVATE KEY-----" } };
      const rendered = {
        host: render(s.with.host!, ctx),
        port: Number(s.with.port ?? "22"),
        "known-hosts": render(s.with["known-hosts"]!, ctx),
      };
      expect(
        poolOf(rendered).map((h) => h.name),
        s.where,
      ).toEqual(["bench-1.example.com", "bench-2.example.com", "bench-3.example.com:2222"]);
      expect(poolOf(rendered)[2]!.user, s.where).toBe("perf-ci");
    }
    // A known-hosts variable missing a host's line is refused before anything runs, naming the host.
    const short = { ...vars, PERF_GATE_KNOWN_HOSTS: vars.PERF_GATE_KNOWN_HOSTS.split("\n").slice(0, 2).join("\n") };
    const gate = steps.find((s) => s.where === "perf-gate.yml gate")!;
    expect(() =>
      poolOf({
        host: render(gate.with.host!, { vars: short }),
        port: 22,
        "known-hosts": render(gate.with["known-hosts"]!, { vars: short }),
      }),
    ).toThrow(
      `input known-hosts: no line pins bench-3.example.com:2222's host key: give one line per host of the pool, as install.sh prints it ("[bench-3.example.com]:2222 ssh-ed25519 AAAA…")`,
    );
  });

  it("a pool's gates and reruns share a concurrency group per pull request, and promotions one for the pool", () => {
    const pr = examplePayload<PrPayload>(
      "pull_request",
      (e) => (e as unknown as { action: string }).action === "synchronize",
    );
    pr.pull_request.number = 2;
    const gate = render(load("workflows/perf-gate.yml").concurrency!.group, {
      github: { event: { ...pr, action: "synchronize" }, repository: REPOSITORY, run_id: 1 },
      vars,
    });
    const comment = examplePayload<{ issue: { number: number } }>("issue_comment");
    comment.issue.number = 2;
    const rerun = render(load("workflows/perf-rerun.yml").jobs.gate!.concurrency!.group, {
      github: { event: comment },
      vars,
    });
    expect(gate).toBe(`perf-gate-${vars.PERF_GATE_HOST}-pr-2`);
    expect(rerun).toBe(gate);
    expect(render(load("workflows/perf-promote.yml").concurrency!.group, { vars })).toBe(
      `perf-gate-${vars.PERF_GATE_HOST}-champion`,
    );
  });
});

describe("a cancelled gate completes its check as cancelled", () => {
  const HEAD = "d".repeat(40);
  let h: GitHubHarness;
  // Host inputs the mode validates but never reaches: the test cancels it first.
  const unusedHost = {
    host: "127.0.0.1",
    "ssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nunused\n-----END OPENSSH PRIVATE KEY-----",
    "known-hosts": "127.0.0.1 ssh-ed25519 AAAAunused",
  };

  beforeAll(async () => {
    h = await GitHubHarness.start();
  });
  afterAll(async () => {
    await h?.stop();
  });
  afterEach(() => h.fake.assertContract());

  it("action.yml runs dist/post.js when the job is cancelled", () => {
    const action = parse(readFileSync(join(repoRoot, "action.yml"), "utf8")) as { runs: Record<string, string> };
    expect(action.runs).toMatchObject({
      using: "node24",
      main: "dist/index.js",
      post: "dist/post.js",
      "post-if": "cancelled()",
    });
  });

  /** Starts a gate that blocks on reading its config (after opening its check), and signals it there. */
  async function cancelledGate(signal: NodeJS.Signals) {
    const payload = examplePayload<PrPayload>("pull_request", (e) => e.action === "opened");
    payload.pull_request.head.sha = HEAD;
    const release = h.fake.hold((op) => op === "repos/get-content");
    try {
      return await h.run(
        h.inputs("gate", { ...unusedHost, artifact: "release.tar.gz" }),
        "pull_request_target",
        payload,
        {},
        {
          started: (child) => {
            const poll = setInterval(() => {
              if (h.fake.requests.at(-1)?.operation === "repos/get-content") {
                clearInterval(poll);
                child.kill(signal);
              }
            }, 50);
            child.once("exit", () => clearInterval(poll));
          },
        },
      );
    } finally {
      release();
    }
  }

  const post = (state: Record<string, string>) =>
    h.run(
      h.inputs("gate"),
      "pull_request_target",
      {},
      Object.fromEntries(Object.entries(state).map(([k, v]) => [`STATE_${k}`, v])),
      { script: "post" },
    );

  it("on SIGTERM (the runner cancelling the step) the step completes it itself, and the post step finds nothing left", async () => {
    const run = await cancelledGate("SIGTERM");
    const check = h.fake.checkRuns.filter((c) => c.head_sha === HEAD).at(-1)!;
    expect(run.code, run.stdout).toBe(1);
    expect(run.stdout).toContain("::warning::perf-gate: SIGTERM: the step is being cancelled");
    expect(check).toMatchObject({
      status: "completed",
      conclusion: "cancelled",
      app: GITHUB_ACTIONS,
      output: { title: "perf-gate: cancelled before a verdict" },
    });
    expect(check.output.summary).toContain(`[The workflow run](https://github.com/${REPOSITORY}/actions/runs/`);
    expect(run.state["perf-gate-open-checks"]).toBe("[]");
    const updates = h.fake.requests.filter((r) => r.operation === "checks/update").length;
    const after = await post(run.state);
    expect(after.stdout).toContain("perf-gate: the main step left no check open");
    expect(h.fake.requests.filter((r) => r.operation === "checks/update")).toHaveLength(updates);
  });

  it("when the step was killed outright, the post step completes the check it saved as its state", async () => {
    const run = await cancelledGate("SIGKILL");
    expect(run.signal).toBe("SIGKILL");
    const check = h.fake.checkRuns.filter((c) => c.head_sha === HEAD).at(-1)!;
    expect(check.status).toBe("in_progress");
    expect(run.state["perf-gate-open-checks"]).toBe(`[${check.id}]`);
    const after = await post(run.state);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toContain(`perf-gate: check ${check.id} completed as cancelled`);
    expect(check).toMatchObject({
      status: "completed",
      conclusion: "cancelled",
      output: { title: "perf-gate: cancelled before a verdict" },
    });
    // A check that finished meanwhile keeps its verdict.
    expect((await post(run.state)).stdout).toContain(`perf-gate: check ${check.id} was already complete`);
  });
});
