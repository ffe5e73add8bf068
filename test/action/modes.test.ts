// The action's modes in-process: src/action/main's run() with real webhook payloads, against the
// GitHub fake on loopback (every request and response validated against GitHub's OpenAPI) and a
// benchmark host in memory whose runs replay a real host's results (test/support/fake-host.ts).
// No root, no bundle: these cover the modes' branches (every label, could not measure,
// configuration errors, a busy or unreachable host, extension, rerun pooling, override, promotion
// and its rollback, calibration and a biased host). The bundle through a real sshd and perf-host
// is gate.e2e.test.ts and modes.e2e.test.ts; the modes that never touch the host run the bundle
// in github-modes.test.ts.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ms } from "../../src/report/format";
import { E2E_CONFIG, examplePayload } from "../support/action-harness";
import { InProcessHarness } from "../support/action-in-process";
import { FakeHost } from "../support/fake-host";
import { GITHUB_ACTIONS } from "../support/github-fake";

const CHAMPION = "c".repeat(40);
const BASE = "b".repeat(40);
const HEAD = "1234567890abcdef1234567890abcdef12345678";
const MERGED = "3234567890abcdef1234567890abcdef12345678";
const PR = 1;
/** Any path that exists: the fake host deploys nothing from it. */
const BUILD = import.meta.dirname;

let h: InProcessHarness;
let host: FakeHost;

beforeEach(async () => {
  host = FakeHost.withChampion(CHAMPION);
  h = await InProcessHarness.startWith(host);
  h.fake.files.set(`.github/perf-gate.yml@${BASE}`, E2E_CONFIG);
  h.fake.files.set(`.github/perf-gate.yml@${MERGED}`, E2E_CONFIG);
  h.fake.setRole("Codertocat", "write");
  h.fake.setRole("maintainer", "maintain");
  h.fake.setRole("reader", "read");
});

afterEach(async () => {
  h.fake.assertContract();
  expect(host.closed, "every connection a mode opened is closed").toBe(host.opened);
  await h.stop();
});

/** A gate of the pull request's head, as a push to it runs one. */
function gate(inputs: Record<string, string> = {}, head = HEAD) {
  h.setPull(PR, head, { baseSha: BASE });
  return h.run(
    h.inputs("gate", { artifact: BUILD, ...inputs }),
    "pull_request",
    h.pullRequestEvent("synchronize", PR, head, BASE),
  );
}

const config = (extra: string) => h.fake.files.set(`.github/perf-gate.yml@${BASE}`, `${E2E_CONFIG}${extra}\n`);
const resultsOf = (run: { outputs: Record<string, string> }) =>
  JSON.parse(readFileSync(run.outputs["result-path"]!, "utf8")) as { plan: { run_id: string; builds: object } }[];

describe("mode gate: the labels", () => {
  it("a slower challenger is red, blocking: the check fails, the label, the sticky comment, the report and the host's results", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    const run = await gate();
    expect(run.outputs.verdict, run.stdout).toBe("red");
    expect(run.outputs.blocking).toBe("true");
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/::error::perf-gate: red, blocking: challenger is [\d.]+ ms slower at p90/);
    expect(Number(run.outputs["estimate-ms"])).toBeCloseTo(3, 0);
    expect(run.outputs.pairs).toBe("6");
    const check = h.lastCheck();
    expect(check).toMatchObject({ head_sha: HEAD, status: "completed", conclusion: "failure" });
    expect(check.output.title).toMatch(/^red, blocking: challenger is [\d.]+ ms slower at p90 \(97\.5% CI/);
    expect(check.output.summary).toContain(
      `challenger \`1234567\` vs champion \`ccccccc\` on host \`bench.example.com\` · [workflow run](${check.details_url})`,
    );
    expect(h.fake.labelsOn(PR)).toEqual(["perf:red"]);
    expect(h.sticky(PR).map((c) => c.body.split("\n")[1])).toEqual([
      expect.stringMatching(/^### perf-gate: 🔴 red, blocking — /),
    ]);
    expect(run.summary).toContain("perf-gate: 🔴 red");
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toBe(check.output.summary);
    expect(resultsOf(run)[0]!.plan.builds).toEqual({
      kind: "ab",
      champion_sha: CHAMPION,
      challenger_sha: HEAD,
      base: "champion",
    });
    expect(host.calls.filter((c) => !c.startsWith("status"))).toEqual([
      `deploy challenger ${HEAD}`,
      "run pr1-1234567-1000-1-0",
      "wait pr1-1234567-1000-1-0",
      "result pr1-1234567-1000-1-0",
      `runs ${HEAD}`,
      "gate-record pr1-1234567-1000-1-0",
    ]);
    // The gate is kept in the host's history, as the verdict says.
    expect(host.entries.at(-1)).toMatchObject({
      kind: "gate",
      run_id: "pr1-1234567-1000-1-0",
      gate: { pull_request: PR, challenger_sha: HEAD, champion_sha: CHAMPION, verdict: "red", blocking: true },
    });
  });

  it("a red within the block threshold is advisory: the check is neutral and the merge allowed", async () => {
    config("block_threshold_percent: 50"); // 10 ms of the 20 ms budget
    host.builds.set(HEAD, { addedMs: 3 });
    const run = await gate();
    expect(run.outputs).toMatchObject({ verdict: "red", blocking: "false" });
    expect(run.code).toBe(0);
    expect(h.lastCheck()).toMatchObject({
      conclusion: "neutral",
      output: { title: expect.stringMatching(/^red, advisory: challenger is [\d.]+ ms slower/) },
    });
    expect(h.fake.labelsOn(PR)).toEqual(["perf:red"]);
  });

  it("a faster challenger is green and an unchanged one grey; the label moves and the comment is updated in place", async () => {
    h.fake.setLabels(PR, ["perf:red", "bug"]);
    host.builds.set(CHAMPION, { addedMs: 3 });
    const green = await gate();
    expect(green.outputs.verdict, green.stdout).toBe("green");
    expect(h.lastCheck()).toMatchObject({
      conclusion: "success",
      output: { title: expect.stringMatching(/^green: challenger is [\d.]+ ms faster/) },
    });
    expect(h.fake.labelsOn(PR)).toEqual(["bug", "perf:green"]);

    host.builds.delete(CHAMPION);
    const grey = await gate({}, "2".repeat(40));
    expect(grey.outputs.verdict, grey.stdout).toBe("grey");
    expect(grey.code).toBe(0);
    expect(h.lastCheck()).toMatchObject({ conclusion: "success", output: { title: expect.stringMatching(/^grey: /) } });
    expect(h.fake.labelsOn(PR)).toEqual(["bug", "perf:grey"]);
    expect(h.sticky(PR)).toHaveLength(1);
    expect(h.sticky(PR)[0]!.body).toContain("grey");
  });

  it("keeps the labels when the head moved while it measured: the verdict stays on its commit's check", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    h.fake.setLabels(PR, ["perf:grey"]);
    host.onVerb = (call) => {
      if (call.startsWith("run ")) h.setPull(PR, "9".repeat(40), { baseSha: BASE });
    };
    const run = await gate();
    expect(run.outputs.verdict).toBe("red");
    expect(run.stdout).toContain(
      "::warning::the pull request's head moved to 9999999 while 1234567 was measured; its verdict is on its check run only",
    );
    expect(h.checksOn(HEAD).at(-1)!.conclusion).toBe("failure");
    expect(h.fake.labelsOn(PR)).toEqual(["perf:grey"]);
    expect(h.sticky(PR)).toEqual([]);
  });
});

describe("mode gate: no verdict", () => {
  it("a host disturbed by other work could not measure: said on the check, the labels removed, what was measured in the artifacts", async () => {
    host.recording = "foreign-load";
    h.fake.setLabels(PR, ["perf:green"]); // about an earlier head
    const run = await gate();
    expect(run.outputs.verdict, run.stdout).toBe("error");
    expect(run.code).toBe(1);
    const check = h.lastCheck();
    expect(check.conclusion).toBe("failure");
    expect(check.output.title).toMatch(/^perf-gate could not measure: the host was disturbed by other work$/);
    expect(check.output.summary).toContain("an infrastructure failure, not a performance verdict");
    expect(check.output.summary).toContain("other work on the host took CPU");
    expect(h.fake.labelsOn(PR)).toEqual([]);
    expect(h.sticky(PR)[0]!.body).toContain("## perf-gate: ⚠️ not measured");
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toContain("### ⚠️ perf-gate could not measure");
    expect(JSON.parse(readFileSync(join(dirname(run.outputs["report-path"]!), "analysis.json"), "utf8"))).toMatchObject(
      { verdict: "could_not_measure" },
    );
    expect(resultsOf(run)).toHaveLength(1);
  });

  it("an unreachable host is an infrastructure failure, neutral when so configured", async () => {
    host.unreachable = true;
    h.fake.setLabels(PR, ["perf:red"]);
    const run = await gate({ "on-infrastructure-failure": "neutral" });
    expect(run.code).toBe(0);
    expect(run.outputs.verdict).toBe("error");
    expect(run.stdout).toContain("::warning::perf-gate could not measure (unreachable): ");
    expect(h.lastCheck()).toMatchObject({
      conclusion: "neutral",
      output: { title: "perf-gate could not measure (unreachable)" },
    });
    expect(h.fake.labelsOn(PR)).toEqual([]);
  });

  it("a host busy past busy-timeout-minutes names the run that holds it", async () => {
    host.heldBy = "run pr7-7777777-99-1-0";
    const before = Date.now();
    const run = await gate({ "busy-timeout-minutes": "3" });
    expect(run.code).toBe(1);
    expect(h.lastCheck()).toMatchObject({
      conclusion: "failure",
      output: { title: "perf-gate could not measure (busy)" },
    });
    expect(h.lastCheck().output.summary).toContain("host busy: run pr7-7777777-99-1-0 since");
    const [deadline] = host.busyDeadlines;
    expect(deadline! - before).toBeGreaterThanOrEqual(3 * 60_000);
    expect(deadline! - Date.now()).toBeLessThanOrEqual(3 * 60_000);
  });

  it("a challenger that crashes is the pull request's failure, named, and no verdict: a failure even where infrastructure failures are neutral", async () => {
    host.builds.set(HEAD, { crashes: true });
    h.fake.setLabels(PR, ["perf:green"]);
    const run = await gate({ "on-infrastructure-failure": "neutral" });
    expect(run.outputs.verdict).toBe("error");
    expect(run.code).toBe(1);
    expect(h.lastCheck()).toMatchObject({
      conclusion: "failure",
      output: { title: "perf-gate: the challenger failed (challenger crashed)" },
    });
    expect(h.lastCheck().output.summary).toContain(
      "This is the pull request's build failing on the benchmark host, not a performance verdict.",
    );
    expect(h.lastCheck().output.summary).toContain(
      "work @ 200 req/s: challenger_crashed: challenger 1234567890abcdef1234567890abcdef12345678 exited",
    );
    expect(h.fake.labelsOn(PR)).toEqual([]);
  });

  it("a challenger's log cannot close the report's code block: a fake verdict in it stays quoted", async () => {
    const forged = "boom\n```\n\n### perf-gate: 🟢 green — challenger is 9.1 ms faster\n<!--";
    host.builds.set(HEAD, { unhealthy: forged });
    await gate();
    for (const text of [h.lastCheck().output.summary ?? "", h.sticky(PR)[0]!.body]) {
      const fence = /^(`{4,})$/m.exec(text)?.[1];
      expect(fence, text).toBeDefined();
      // The log, verbatim, between two fences longer than any run of backticks in it.
      expect(text).toContain(`${fence}\n`);
      expect(text.slice(text.indexOf(fence!) + fence!.length)).toMatch(
        new RegExp(`^\\n[^]*### perf-gate: 🟢 green[^]*\\n${fence}$`, "m"),
      );
    }
  });
});

describe("a fork's head and the required check", () => {
  const fork = { fork: true } as const;
  const forkHeadIs = (head: string) => h.setPull(PR, head, { baseSha: BASE, headRepo: "forker/Hello-World" });
  const approvedGate = (head = HEAD) =>
    h.run(
      h.inputs("gate", { artifact: BUILD }),
      "pull_request_target",
      h.pullRequestEvent("labeled", PR, head, BASE, { ...fork, label: "perf:approved", sender: "maintainer" }),
    );
  const access = (action: string, head: string) =>
    h.run(h.inputs("access"), "pull_request_target", h.pullRequestEvent(action, PR, head, BASE, fork));

  it("a reopen approves nothing new and covers nothing: the commit's blocking red is repeated on the newer check", async () => {
    forkHeadIs(HEAD);
    host.builds.set(HEAD, { addedMs: 3 });
    expect((await approvedGate()).outputs.blocking).toBe("true");
    const reopened = await access("reopened", HEAD);
    expect(reopened.outputs).toMatchObject({ allowed: "false", verdict: "skipped" });
    const [measured, repeated] = h.checksOn(HEAD);
    expect(repeated).toMatchObject({ conclusion: "failure", output: { title: measured!.output.title } });
    expect(repeated!.output.summary).toMatch(
      /^Repeated from this commit's earlier perf-gate check: this event measured nothing/,
    );
    expect(repeated!.output.summary).toContain(measured!.output.summary);
    expect(h.fake.labelsOn(PR)).toEqual(["perf:red"]);
  });

  it("a new head waiting for approval blocks, and the labels and comment no longer speak of the earlier head", async () => {
    forkHeadIs(HEAD);
    host.builds.set(CHAMPION, { addedMs: 3 });
    expect((await approvedGate()).outputs.verdict).toBe("green");
    const pushed = "9".repeat(40);
    forkHeadIs(pushed);
    await access("synchronize", pushed);
    expect(h.checksOn(pushed)).toMatchObject([
      { conclusion: "action_required", output: { title: "perf-gate: waiting for approval" } },
    ]);
    expect(h.fake.labelsOn(PR)).toEqual([]);
    const [sticky] = h.sticky(PR);
    expect(sticky!.body.split("\n")[1]).toBe("## perf-gate: ⏸️ 9999999 not measured");
    expect(sticky!.body).not.toContain("🟢 green");
    // A maintainer may still let it merge unmeasured, saying why.
    const overridden = await h.run(
      h.inputs("command"),
      "issue_comment",
      h.commentEvent(PR, "/perf override docs only", "maintainer"),
    );
    expect(overridden.outputs.command).toBe("override");
    expect(h.checksOn(pushed).at(-1)).toMatchObject({ conclusion: "success" });
  });

  it("a cancelled gate on the commit hides nothing: the verdict before it is the one repeated", async () => {
    forkHeadIs(HEAD);
    host.builds.set(HEAD, { addedMs: 3 });
    expect((await approvedGate()).outputs.blocking).toBe("true");
    h.fake.addCheckRun({
      head_sha: HEAD,
      name: "perf-gate",
      status: "completed",
      conclusion: "cancelled",
      output: { title: "perf-gate: cancelled before a verdict", summary: "cancelled" },
      app: GITHUB_ACTIONS,
    });
    await access("reopened", HEAD);
    expect(h.checksOn(HEAD).map((c) => c.conclusion)).toEqual(["failure", "cancelled", "failure"]);
  });

  it("a refusal stays blocking when GitHub then refuses the labels, whatever on-infrastructure-failure says", async () => {
    forkHeadIs(HEAD);
    h.fake.refusals.set("issues/list-labels-on-issue", {
      status: 403,
      message: "You have exceeded a secondary rate limit",
    });
    const run = await h.run(
      h.inputs("gate", { artifact: BUILD, "on-infrastructure-failure": "neutral" }),
      "pull_request_target",
      h.pullRequestEvent("synchronize", PR, HEAD, BASE, fork),
    );
    expect(run.outputs.verdict).toBe("skipped");
    expect(h.checksOn(HEAD).map((c) => c.conclusion)).toEqual(["action_required"]);
    expect(run.stdout).toContain("::warning::the refusal is on the check run, but the labels or the sticky comment");
    expect(host.opened).toBe(0);
  });

  it("a fork's first head waiting for approval writes no comment", async () => {
    forkHeadIs(HEAD);
    await access("opened", HEAD);
    expect(h.lastCheck()).toMatchObject({ conclusion: "action_required" });
    expect(h.sticky(PR)).toEqual([]);
  });
});

describe("mode gate: GitHub after the verdict", () => {
  it("a label GitHub refuses once the verdict is on the check is a warning: the verdict stands", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    h.fake.refusals.set("issues/add-labels", { status: 403, message: "You have exceeded a secondary rate limit" });
    const run = await gate({ "on-infrastructure-failure": "neutral" });
    expect(run.outputs.verdict).toBe("red");
    expect(run.code).toBe(1);
    expect(h.checksOn(HEAD).map((c) => [c.conclusion, (c.output.title ?? "").split(":")[0]])).toEqual([
      ["failure", "red, blocking"],
    ]);
    expect(run.stdout).toContain(
      "::warning::the verdict is on the check run, but the labels, the sticky comment or the job summary could not be updated: ",
    );
  });
});

describe("mode gate: configuration errors, before the host", () => {
  it("a bad config fails naming the file, its line and the key, and never connects", async () => {
    const cases: [string, RegExp][] = [
      [
        E2E_CONFIG.replace("warmup_seconds: 2", "warmup_seconds: 2\nwarmup_sconds: 3"),
        /\.github\/perf-gate\.yml:9: warmup_sconds: unknown key/,
      ],
      [E2E_CONFIG.replace("budget_ms: 20", "budget_ms: -20"), /\.github\/perf-gate\.yml:6: slo\.budget_ms: /],
      [E2E_CONFIG.replace('command: ["./start.sh"]', "command: []"), /\.github\/perf-gate\.yml:2: service\.command: /],
    ];
    for (const [text, message] of cases) {
      h.fake.files.set(`.github/perf-gate.yml@${BASE}`, text);
      const run = await gate();
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(message);
      expect(h.lastCheck()).toMatchObject({
        conclusion: "failure",
        output: { title: "perf-gate: configuration error" },
      });
      expect(h.lastCheck().output.summary).toMatch(message);
      expect(run.outputs.verdict).toBe("error");
    }
    h.fake.files.delete(`.github/perf-gate.yml@${BASE}`);
    await gate();
    expect(h.lastCheck().output.summary).toContain(
      ".github/perf-gate.yml: not found at bbbbbbb on the base branch master; the gate reads its config from the base branch so that a pull request cannot change its own gate",
    );
    expect(host.opened).toBe(0);
  });

  it("a missing build is the input's error, named", async () => {
    const cases: [string, string][] = [
      ["", "input artifact: mode gate deploys a build"],
      ["/nonexistent/build", "input artifact: /nonexistent/build does not exist (build the commit first)"],
    ];
    for (const [artifact, message] of cases) {
      const run = await gate({ artifact });
      expect(run.code).toBe(1);
      expect(h.lastCheck()).toMatchObject({
        conclusion: "failure",
        output: { title: "perf-gate: configuration error" },
      });
      expect(h.lastCheck().output.summary).toContain(message);
    }
    expect(host.opened).toBe(0);
  });

  it("a plan the host refuses is the config's error", async () => {
    host.refusePlan = "plan: service.health_path: must start with /";
    const run = await gate();
    expect(h.lastCheck()).toMatchObject({ conclusion: "failure", output: { title: "perf-gate: configuration error" } });
    expect(run.stdout).toContain("plan: service.health_path: must start with /");
  });
});

describe("mode gate: comparison_base merge-base", () => {
  const MERGE_BASE = "3".repeat(40);
  beforeEach(() => {
    config("comparison_base: merge-base");
    h.fake.mergeBases.set(`${BASE}...${HEAD}`, MERGE_BASE);
  });

  it("needs the merge base's build, of that commit, before the host runs anything", async () => {
    let run = await gate();
    expect(run.code).toBe(1);
    expect(h.lastCheck().output).toMatchObject({ title: "perf-gate: configuration error" });
    expect(h.lastCheck().output.summary).toMatch(
      /input base-artifact: comparison_base is merge-base and the merge base 3333333 of 1234567 is not the host's champion ccccccc/,
    );
    run = await gate({ "base-artifact": BUILD, "base-sha": "5".repeat(40) });
    expect(h.lastCheck().output.summary).toMatch(/input base-sha: .*but base-artifact is a build of 5555555/);
    run = await gate({ "base-artifact": "/nonexistent/base", "base-sha": MERGE_BASE });
    expect(h.lastCheck().output.summary).toContain(
      "input base-artifact: /nonexistent/base does not exist (build the merge base 3333333 first)",
    );
    expect(host.runIds()).toEqual([]);
  });

  it("runs the merge base's build in the champion's arm; the champion stays", async () => {
    host.builds.set(MERGE_BASE, { addedMs: 3 }); // main got faster since the branch left it
    host.builds.set(HEAD, { addedMs: 3 }); // the branch changed nothing
    const run = await gate({ "base-artifact": BUILD, "base-sha": MERGE_BASE });
    expect(run.outputs.verdict, run.stdout).toBe("grey");
    expect(resultsOf(run)[0]!.plan.builds).toEqual({
      kind: "ab",
      champion_sha: MERGE_BASE,
      challenger_sha: HEAD,
      base: "merge-base",
    });
    expect(host.calls).toContain(`deploy champion ${MERGE_BASE}`);
    expect(host.requestOf(host.runIds()[0]!).merge_base_sha).toBe(MERGE_BASE);
    expect(h.lastCheck().output.summary).toContain("challenger `1234567` vs merge base `3333333`");
    expect(host.champion).toBe(CHAMPION);
  });

  it("a merge base that is the champion is compared with as the champion, and the report says so", async () => {
    h.fake.mergeBases.set(`${BASE}...${HEAD}`, CHAMPION);
    const run = await gate();
    expect(run.outputs.verdict).toBeDefined();
    expect(resultsOf(run)[0]!.plan.builds).toMatchObject({ champion_sha: CHAMPION, base: "champion" });
    expect(h.lastCheck().output.summary).toContain(
      "Compared with the merge base `ccccccc`, which is the host's champion.",
    );
  });
});

describe("mode gate: the extending gate", () => {
  it("measures an unclear comparison again, up to max_extensions, and judges all of it", async () => {
    h.fake.files.set(`.github/perf-gate.yml@${BASE}`, E2E_CONFIG.replace("max_extensions: 0", "max_extensions: 2"));
    host.builds.set(HEAD, { addedMs: 0.26 }); // the interval holds the 0.2 ms block threshold
    const run = await gate();
    console.log(`[extension] ${h.lastCheck().output.title}`);
    expect(host.runIds()[0]).toBe("pr1-1234567-1000-1-0");
    expect(host.runIds()[1]).toBe("pr1-1234567-1000-1-x1c0-0");
    expect(run.stdout).toMatch(
      /work@200: the interval \[[\d.-]+, [\d.-]+\] ms holds the block threshold ±0\.200 ms: extension 1 of 2/,
    );
    expect(Number(run.outputs.pairs)).toBe(6 * host.runIds().length);
    expect(resultsOf(run)).toHaveLength(host.runIds().length);
    expect(h.lastCheck().output.summary).toContain("Looks at this build (each run pooled in turn");
  });

  it("does not extend when max_extensions is 0", async () => {
    host.builds.set(HEAD, { addedMs: 0.26 });
    await gate();
    expect(host.runIds()).toEqual(["pr1-1234567-1000-1-0"]);
  });
});

describe("/perf rerun and /perf override", () => {
  const command = (body: string, login = "Codertocat") =>
    h.run(h.inputs("command"), "issue_comment", h.commentEvent(PR, body, login));

  it("a writer's rerun pins the head, measures it again and pools it with the first run", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    const first = await gate();
    const asked = h.commentEvent(PR, "/perf rerun\nthe first run looked noisy");
    const cmd = await h.run(h.inputs("command"), "issue_comment", asked);
    expect(cmd.outputs).toMatchObject({ command: "rerun", sha: HEAD });
    expect(h.fake.reactionsOn(asked.comment.id)).toEqual(["eyes"]);
    const opened = host.opened;
    expect(opened).toBe(1); // mode command never connects

    const again = await h.run(h.inputs("rerun", { artifact: BUILD, sha: HEAD }), "issue_comment", asked);
    expect(again.outputs.verdict, again.stdout).toBe("red");
    expect(again.outputs.pairs).toBe("12");
    const [firstRun, secondRun] = [resultsOf(first)[0]!.plan.run_id, resultsOf(again).at(-1)!.plan.run_id];
    expect(resultsOf(again).map((r) => r.plan.run_id)).toEqual([firstRun, secondRun]);
    const [sticky] = h.sticky(PR);
    expect(h.sticky(PR)).toHaveLength(1);
    for (const text of [
      firstRun,
      secondRun,
      "Rerun requested by @Codertocat",
      "pooled with 1 earlier run of 1234567",
      "Looks at this build (each run pooled in turn",
    ]) {
      expect(sticky!.body).toContain(text);
    }
    expect(h.replies(PR)).toEqual([]);
  });

  it("a rerun after the config changed the service spec does not pool the earlier run, and says why", async () => {
    await gate();
    h.fake.files.set(
      `.github/perf-gate.yml@${BASE}`,
      E2E_CONFIG.replace("health_timeout_seconds: 10", "health_timeout_seconds: 11"),
    );
    const asked = h.commentEvent(PR, "/perf rerun");
    const again = await h.run(h.inputs("rerun", { artifact: BUILD, sha: HEAD }), "issue_comment", asked);
    expect(resultsOf(again)).toHaveLength(1);
    expect(h.lastCheck().output.summary).toMatch(
      /1 earlier run of 1234567 \(pr1-1234567-\d+-1-0\) ran another way \(the champion's service spec, the challenger's service spec\) and is not pooled\./,
    );
  });

  it("a rerun leaves out an earlier run whose result the host answers wrongly, says so, and still decides", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    const first = await gate();
    const earlier = resultsOf(first)[0]!.plan.run_id;
    host.editResult(earlier, (r) => {
      r.slices[1]!.arm = r.slices[0]!.arm;
    });
    const asked = h.commentEvent(PR, "/perf rerun");
    const again = await h.run(h.inputs("rerun", { artifact: BUILD, sha: HEAD }), "issue_comment", asked);
    expect(again.outputs.verdict, again.stdout).toBe("red");
    expect(resultsOf(again)).toHaveLength(1);
    expect(h.lastCheck().output.summary).toContain(
      `An earlier run of 1234567 (${earlier}) is not pooled: the host's answer is not a result it could have measured (result ${earlier}: unexpected answer: slices[1].arm:`,
    );
  });

  it("refuses a reader's rerun, and a rerun of a head that moved, without reaching the host", async () => {
    h.setPull(PR, HEAD, { baseSha: BASE });
    const byReader = h.commentEvent(PR, "/perf rerun", "reader");
    expect(
      (await h.run(h.inputs("rerun", { artifact: BUILD, sha: HEAD }), "issue_comment", byReader)).outputs.verdict,
    ).toBe("skipped");
    expect(h.replies(PR).at(-1)).toBe(
      "@reader `/perf rerun` refused: @reader has read permission on this repository; `/perf rerun` needs write or higher.",
    );
    h.setPull(PR, "2".repeat(40), { baseSha: BASE });
    const stale = await h.run(
      h.inputs("rerun", { artifact: BUILD, sha: HEAD }),
      "issue_comment",
      h.commentEvent(PR, "/perf rerun"),
    );
    expect(stale.outputs.verdict).toBe("skipped");
    expect(h.replies(PR).at(-1)).toMatch(
      /^@Codertocat the pull request moved since `\/perf rerun`: it pinned 1234567, and the head is now 2222222\./,
    );
    const empty = await h.run(
      h.inputs("rerun", { artifact: BUILD }),
      "issue_comment",
      h.commentEvent(PR, "/perf rerun"),
    );
    expect(empty.code).toBe(1);
    expect(empty.stdout).toContain("::error::input sha: mode rerun measures the head SHA that mode command pinned");
    expect(host.opened).toBe(0);
  });

  it("an override needs maintain, turns the failed check to success with who and why, and keeps the label", async () => {
    host.builds.set(HEAD, { addedMs: 3 });
    await gate();
    await command("/perf override we accept it");
    expect(h.replies(PR).at(-1)).toContain("`/perf override` needs maintain or higher");
    const reason = "the slowdown buys correct rounding; tracked in #12";
    const done = await command(`/perf override ${reason}`, "maintainer");
    expect(done.outputs.command).toBe("override");
    const check = h.lastCheck();
    expect(check).toMatchObject({ conclusion: "success", output: { title: `overridden by @maintainer: ${reason}` } });
    expect(check.output.summary).toContain("### perf-gate: 🔴 red, blocking — ");
    expect(h.sticky(PR)[0]!.body).toMatch(/^<!-- perf-gate:sticky -->\n> \*\*Overridden\*\* by @maintainer/);
    expect(h.fake.labelsOn(PR)).toEqual(["perf:red"]);
    await command("/perf override again", "maintainer");
    expect(h.replies(PR).at(-1)).toBe(
      "@maintainer nothing to override on 1234567: its latest perf-gate check is success.",
    );
    expect(host.opened).toBe(1);
  });
});

describe("promotion and rollback", () => {
  const push = (sha = MERGED) => {
    const p = examplePayload<{ ref: string; after: string; deleted: boolean }>(
      "push",
      (e) => e.ref === "refs/heads/master" && !e.deleted,
    );
    p.after = sha;
    return p;
  };
  const promote = (sha = MERGED) =>
    h.run(h.inputs("promote", { artifact: BUILD }), "push", push(sha), { GITHUB_SHA: sha });
  const byHand = (sha: string) => {
    h.fake.files.set(`.github/perf-gate.yml@${sha}`, E2E_CONFIG);
    return h.run(
      h.inputs("promote", { artifact: BUILD, sha }),
      "workflow_dispatch",
      examplePayload<object>("workflow_dispatch"),
      { GITHUB_SHA: MERGED },
    );
  };

  it("main's new HEAD becomes the champion, checked by an A/A run; earlier runs of a commit are not pooled across champions; rollback restores", async () => {
    await gate();
    const promoted = await promote();
    expect(promoted.code, promoted.stdout).toBe(0);
    expect(promoted.outputs).toMatchObject({ champion: MERGED, "previous-champion": CHAMPION });
    expect([host.champion, host.previous]).toEqual([MERGED, CHAMPION]);
    const check = h.checksOn(MERGED, "perf-gate / champion").at(-1)!;
    expect(check).toMatchObject({
      conclusion: "success",
      output: { title: "champion is now 3234567 (previous ccccccc kept for rollback); A/A check passed" },
    });
    expect(check.output.summary).toMatch(
      /A\/A check, the champion on both ports: (no detectable difference between the ports|port :\d+ measures [\d.]+ ms (slower|faster) than port :\d+) at p90/,
    );
    const verification = host.runIds().at(-1)!;
    expect(verification).toMatch(/^promote-3234567-\d+-1-0$/);
    expect(host.requestOf(verification).loadgen.pairs).toBe(4); // promotion.verify_pairs

    const after = await gate();
    expect(after.outputs.pairs).toBe("6");
    expect(h.lastCheck().output.summary).toMatch(
      /1 earlier run of 1234567 \(pr1-1234567-\d+-1-0\) measured another champion and is not pooled/,
    );

    const rolledBack = await h.run(
      h.inputs("rollback"),
      "workflow_dispatch",
      examplePayload<object>("workflow_dispatch"),
      { GITHUB_SHA: MERGED },
    );
    expect(rolledBack.code, rolledBack.stdout).toBe(0);
    expect(rolledBack.outputs).toMatchObject({ champion: CHAMPION, "previous-champion": "" });
    expect(rolledBack.summary).toContain("champion is ccccccc again (rolled back from 3234567); A/A check passed");
  });

  it("promoting the champion again changes nothing", async () => {
    const again = await byHand(CHAMPION);
    expect(again.code, again.stdout).toBe(0);
    expect(h.checksOn(CHAMPION, "perf-gate / champion").at(-1)).toMatchObject({
      conclusion: "success",
      output: { title: "ccccccc is already the champion" },
    });
    expect(host.runIds()).toEqual([]);
  });

  it("a new champion that cannot take the rate (its A/A check's slices all refused) is rolled back, not kept as unmeasured", async () => {
    const overwhelmed = "5234567890abcdef1234567890abcdef12345678";
    host.onVerb = (call) => {
      if (!call.startsWith("result ")) return;
      host.editResult(call.slice("result ".length), (r) => {
        for (const s of r.slices) Object.assign(s, { valid: false, invalid_reason: "overflow: the queue was full" });
      });
    };
    const r = await byHand(overwhelmed);
    expect(r.code).toBe(1);
    expect(h.checksOn(overwhelmed, "perf-gate / champion").at(-1)).toMatchObject({
      conclusion: "failure",
      output: { title: "promotion of 5234567 failed its A/A check; rolled back" },
    });
    expect(host.champion).toBe(CHAMPION);
  });

  it("a build that fails its A/A check after the swap is rolled back; one never healthy is refused before it", async () => {
    const broken = "4234567890abcdef1234567890abcdef12345678";
    host.builds.set(broken, { crashes: true });
    const r = await byHand(broken);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /::error::perf-gate: promotion of 4234567 failed its A\/A check; rolled back: .*champion_crashed/,
    );
    expect(h.checksOn(broken, "perf-gate / champion").at(-1)).toMatchObject({
      conclusion: "failure",
      output: { title: "promotion of 4234567 failed its A/A check; rolled back" },
    });
    expect([host.champion, host.previous]).toEqual([CHAMPION, ""]);

    const dead = "6234567890abcdef1234567890abcdef12345678";
    host.builds.set(dead, { unhealthy: "cannot open the database" });
    const refused = await byHand(dead);
    expect(refused.code).toBe(1);
    const check = h.checksOn(dead, "perf-gate / champion").at(-1)!;
    expect(check).toMatchObject({ conclusion: "failure", output: { title: "perf-gate: promotion failed" } });
    expect(check.output.summary).toMatch(
      /^\*\*Promotion of 6234567 failed\*\*; the host's champion is ccccccc\.[\s\S]*promotion refused[\s\S]*cannot open the database/,
    );
    expect(host.champion).toBe(CHAMPION);
  });

  it("an A/A check that could not measure neither passes nor fails the new champion: it stays, and the check is neutral", async () => {
    host.recording = "foreign-load";
    const r = await promote();
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain("::warning::perf-gate: the A/A check of 3234567 could not measure");
    expect(h.checksOn(MERGED, "perf-gate / champion").at(-1)).toMatchObject({
      conclusion: "neutral",
      output: { title: "champion is now 3234567 (previous ccccccc kept for rollback); A/A check could not measure" },
    });
    expect(host.champion).toBe(MERGED);
  });

  it("a failure anywhere says what the host serves now", async () => {
    host.heldBy = "run pr2-2222222-1-1-0";
    const r = await promote();
    expect(r.code).toBe(1);
    expect(h.checksOn(MERGED, "perf-gate / champion").at(-1)!.output.summary).toMatch(
      /^\*\*Promotion of 3234567 failed\*\*; the host's champion is ccccccc\.[\s\S]*host busy: run pr2-2222222-1-1-0/,
    );
    host.heldBy = null;
    host.unreachable = true;
    await promote();
    expect(h.checksOn(MERGED, "perf-gate / champion").at(-1)!.output.summary).toMatch(
      /^\*\*Promotion of 3234567 failed\*\*; the host's champion could not be read\./,
    );
  });
});

describe("mode calibrate", () => {
  const calibrate = () => h.run(h.inputs("calibrate"), "schedule", { schedule: "17 4 * * 1" }, { GITHUB_SHA: MERGED });

  it("records a floor that the next verdict quotes, and the next calibration reports its drift", async () => {
    const first = await calibrate();
    expect(first.code, first.stdout).toBe(0);
    expect(first.outputs).toMatchObject({ champion: CHAMPION, "host-biased": "false" });
    const floor = host.floors.at(-1)!;
    expect(floor.run_id).toMatch(/^calibrate-\d+-1-0$/);
    const report = readFileSync(first.outputs["report-path"]!, "utf8");
    expect(report).toContain(`| work@200 | ±${ms(floor.half_width_ms)} ms |`);
    expect(report).toContain("| none | — |");

    await gate();
    expect(h.lastCheck().output.title).toContain(`A/A floor ±${ms(floor.half_width_ms)} ms`);

    const second = await calibrate();
    const now = host.floors.at(-1)!;
    expect(now.run_id).not.toBe(floor.run_id);
    expect(readFileSync(second.outputs["report-path"]!, "utf8")).toContain(`±${ms(floor.half_width_ms)} ms (20`);
    expect(host.floors).toHaveLength(2);
  });

  it("declares a biased host only after a confirmation run, and every verdict then says so", async () => {
    host.portBiasMs = 2;
    const run = await calibrate();
    expect(run.code, run.stdout).toBe(1);
    expect(run.outputs["host-biased"]).toBe("true");
    expect(run.stdout).toMatch(
      /::error::perf-gate: biased host: A\/A interval for work@200 at p90 excludes 0 in two runs \(\[\+[\d.]+, \+[\d.]+\] ms and \[\+[\d.]+, \+[\d.]+\] ms\)/,
    );
    expect(host.runIds()).toEqual([
      expect.stringMatching(/^calibrate-\d+-1-0$/),
      expect.stringMatching(/^calibrate-\d+-1-confirm0-0$/),
    ]);
    expect(host.floors.at(-1)!.run_id).toBe(host.runIds()[1]);
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toContain(
      "excluded 0, so it was measured again; the confirmation run's excludes 0 too",
    );

    await gate();
    expect(h.lastCheck().output.title).toMatch(/(\(|; )biased host: see the report\)$/);
    expect(h.lastCheck().output.summary).toContain("Biased host");
  });

  it("records no floor from a run the host could not vouch for, and fails the job saying what was measured", async () => {
    host.recording = "foreign-load";
    const run = await calibrate();
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/::error::.*could not measure: the host was disturbed/);
    expect(host.floors).toEqual([]);
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toContain("### ⚠️ perf-gate could not measure");
    expect(run.summary).toContain("could not measure");
  });
});
