// The modes that never touch the host, end to end: dist/index.js under Node 24 with real webhook
// payloads, against the contract-checked GitHub fake. mode access decides before any build
// whether a pull request's head may be built and measured; mode command takes /perf comments.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CommentPayload, GitHubHarness, type PullRequestPayload, REPOSITORY } from "../support/action-harness";
import { ACTIONS_BOT, type App, botOf, GITHUB_ACTIONS } from "../support/github-fake";

const MARKER = "<!-- perf-gate:sticky -->";
const BASE = "b".repeat(40);
let h: GitHubHarness;
let pr = 100;

beforeAll(async () => {
  h = await GitHubHarness.start();
  h.fake.setRole("Codertocat", "write");
  h.fake.setRole("maintainer", "maintain");
  h.fake.setRole("triager", "triage");
});

afterAll(async () => {
  await h?.stop();
});

afterEach(() => h.fake.assertContract());

const prEvent = (action: string, head: string, o: { fork?: boolean; label?: string; sender?: string } = {}) =>
  h.pullRequestEvent(action, pr, head, BASE, o);
const access = (p: PullRequestPayload) => h.run(h.inputs("access"), "pull_request_target", p);
/** GitHub's view of the fork's pull request now: its head is `head`. */
const forkHeadIs = (head: string) => h.setPull(pr, head, { baseSha: BASE, headRepo: "forker/Hello-World" });
const checksOn = (sha: string) => h.checksOn(sha);

describe("mode access, before the build", () => {
  it("lets a branch of this repository be built, and says nothing on GitHub", async () => {
    pr++;
    const before = h.fake.requests.length;
    const run = await access(prEvent("opened", "a1".repeat(20)));
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.allowed).toBe("true");
    expect(run.outputs["merge-base-sha"]).toBe(""); // no config on the base branch: nothing more to build
    expect(h.fake.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("names the merge base for the build-base job when the base branch's config compares with it", async () => {
    pr++;
    const head = "a2".repeat(20);
    const config = `service: {command: ["./start.sh"]}\nslo: {budget_ms: 20}\nworkloads: [{name: w, rates: [100], requests: [{path: /}]}]\n`;
    h.fake.files.set(`.github/perf-gate.yml@${BASE}`, `${config}comparison_base: merge-base\n`);
    h.fake.mergeBases.set(`${BASE}...${head}`, "3".repeat(40));
    try {
      const run = await access(prEvent("opened", head));
      expect(run.outputs).toMatchObject({ allowed: "true", "merge-base-sha": "3".repeat(40) });
      h.fake.files.set(`.github/perf-gate.yml@${BASE}`, config);
      expect((await access(prEvent("synchronize", head))).outputs).toMatchObject({
        allowed: "true",
        "merge-base-sha": "",
      });
    } finally {
      h.fake.files.delete(`.github/perf-gate.yml@${BASE}`);
    }
  });

  it("holds a fork's head until a writer approves it, and clears an approval that approves nothing", async () => {
    pr++;
    const head = "f1".repeat(20);
    h.fake.addLabel(pr, "perf:approved"); // left from an earlier head
    forkHeadIs(head);
    const opened = await access(prEvent("synchronize", head, { fork: true }));
    expect(opened.outputs).toMatchObject({ allowed: "false", verdict: "skipped" });
    expect(h.fake.labelsOn(pr)).toEqual([]);
    const [check] = checksOn(head);
    expect(check).toMatchObject({
      conclusion: "action_required",
      app: GITHUB_ACTIONS,
      output: { title: "perf-gate: waiting for approval" },
    });
    expect(check!.details_url).toMatch(new RegExp(`^https://github.com/${REPOSITORY}/actions/runs/\\d+$`));
    expect(check!.output.summary).toMatch(
      /comes from a fork.*until a user with write permission approves head f1f1f1f: add the perf:approved label/,
    );

    // A triager can add labels but cannot approve: the label goes again.
    h.fake.addLabel(pr, "perf:approved");
    const byTriager = await access(prEvent("labeled", head, { fork: true, label: "perf:approved", sender: "triager" }));
    expect(byTriager.outputs.allowed).toBe("false");
    expect(checksOn(head).at(-1)!.output.summary).toContain(
      "perf:approved was added by a user with triage permission; write or higher is needed",
    );
    expect(h.fake.labelsOn(pr)).toEqual([]);

    // A maintainer (GitHub's permission field says "write"), with the label spelt otherwise.
    h.fake.addLabel(pr, "Perf:Approved");
    const checks = h.fake.checkRuns.length;
    const approved = await access(
      prEvent("labeled", head, { fork: true, label: "Perf:Approved", sender: "maintainer" }),
    );
    expect(approved.outputs.allowed, approved.stdout).toBe("true");
    expect(approved.stdout).toContain("access: a user with maintain permission approved f1f1f1f with perf:approved");
    expect(h.fake.labelsOn(pr)).toEqual(["perf:approved"]); // the label keeps its first spelling: GitHub's names ignore case
    expect(h.fake.checkRuns).toHaveLength(checks);
  });

  it("approves only the head the label was added on: a push before the job refuses it, and removes the label", async () => {
    pr++;
    const approved = "1234567890abcdef1234567890abcdef12345678";
    const pushed = "2234567890abcdef1234567890abcdef12345678";
    // The maintainer labels 1234567; the fork pushes 2234567 before the access job asks GitHub.
    h.fake.addLabel(pr, "perf:approved");
    forkHeadIs(pushed);
    const labeled = prEvent("labeled", approved, { fork: true, label: "perf:approved", sender: "maintainer" });
    const stale = await access(labeled);
    expect(stale.code, stale.stdout).toBe(0);
    expect(stale.outputs).toMatchObject({ allowed: "false", verdict: "skipped" });
    expect(h.fake.labelsOn(pr)).toEqual([]);
    expect(checksOn(pushed)).toEqual([]); // the new head's own synchronize run says what it needs
    const [check] = checksOn(approved);
    expect(check).toMatchObject({
      status: "completed",
      conclusion: "action_required",
      app: GITHUB_ACTIONS,
      output: { title: "perf-gate: approved 1234567, head is now 2234567: approve again" },
    });
    expect(check!.details_url).toMatch(new RegExp(`^https://github.com/${REPOSITORY}/actions/runs/\\d+$`));
    expect(check!.output.summary).toMatch(
      /^\*\*Not run\.\*\* perf:approved approved 1234567, but the pull request's head is now 2234567: a push landed after the approval, so 2234567 is code nobody approved/,
    );

    // Approved again on the head it now is, the label holds and the head may be built.
    h.fake.addLabel(pr, "perf:approved");
    const again = await access(
      prEvent("labeled", pushed, { fork: true, label: "perf:approved", sender: "maintainer" }),
    );
    expect(again.outputs.allowed, again.stdout).toBe("true");
    expect(again.stdout).toContain(
      "access: a user with maintain permission approved 2234567 with perf:approved, and it is still the head",
    );
    expect(h.fake.labelsOn(pr)).toEqual(["perf:approved"]);
    expect(checksOn(pushed)).toEqual([]);
  });

  it("does nothing for a label that decides nothing", async () => {
    pr++;
    h.fake.addLabel(pr, "perf:approved");
    const before = h.fake.requests.length;
    for (const p of [
      prEvent("labeled", "f2".repeat(20), { fork: true, label: "documentation" }),
      prEvent("labeled", "a2".repeat(20), { label: "perf:approved" }),
    ]) {
      const run = await access(p);
      expect(run.code, run.stdout).toBe(0);
      expect(run.outputs.allowed).toBe("false");
      expect(run.stdout).toMatch(/label decides nothing about/);
    }
    expect(h.fake.requests.length).toBe(before);
    expect(h.fake.labelsOn(pr)).toEqual(["perf:approved"]);
  });
});

describe("mode command", () => {
  const HEAD = "c1".repeat(20);
  const IMPOSTOR: App = { id: 4242, slug: "perf-gate-lookalike", name: "perf-gate lookalike" };

  const comment = (body: string, login: string) => h.commentEvent(pr, body, login);
  const command = (p: CommentPayload) => h.run(h.inputs("command"), "issue_comment", p);
  const ours = () => h.ours(pr);

  it("lets a real maintainer override this app's failed check, whatever another app's check of the same name says", async () => {
    pr++;
    h.fake.pulls.set(pr, {
      headSha: HEAD,
      baseSha: BASE,
      baseRef: "master",
      state: "open",
      headRepo: REPOSITORY,
      headPushedAt: "2026-11-21T09:00:00Z",
    });
    const output = (title: string) => ({ title, summary: `## perf-gate: ${title}` });
    const mine = h.fake.addCheckRun({
      name: "perf-gate",
      head_sha: HEAD,
      status: "completed",
      conclusion: "failure",
      output: output("red, blocking"),
      app: GITHUB_ACTIONS,
    });
    const theirs = h.fake.addCheckRun({
      name: "perf-gate",
      head_sha: HEAD,
      status: "completed",
      conclusion: "success",
      output: output("green"),
      app: IMPOSTOR,
    });
    h.fake.addComment(pr, `${MARKER}\n## perf-gate: 🔴 red — blocking`, ACTIONS_BOT);
    h.fake.addComment(pr, `${MARKER}\n## perf-gate: 🟢 green`, botOf(IMPOSTOR, 77));

    const run = await command(comment("/perf override the slowdown buys correct rounding", "maintainer"));
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.command).toBe("override");
    expect(mine).toMatchObject({
      conclusion: "success",
      output: { title: "overridden by @maintainer: the slowdown buys correct rounding" },
    });
    expect(theirs).toMatchObject({ conclusion: "success", output: { title: "green" } });
    expect(ours()[0]!.body).toMatch(
      new RegExp(
        `^${MARKER}\\n> \\*\\*Overridden\\*\\* by @maintainer on .* UTC: the slowdown buys correct rounding\\n\\n## perf-gate: 🔴 red`,
      ),
    );
    expect((h.fake.comments.get(pr) ?? []).find((c) => c.user.app?.id === IMPOSTOR.id)!.body).toBe(
      `${MARKER}\n## perf-gate: 🟢 green`,
    );
    const updated = (id: number) =>
      h.fake.requests.filter(
        (r) => r.operation === "checks/update" && r.path === `/repos/${REPOSITORY}/check-runs/${id}`,
      );
    expect([updated(mine.id).length, updated(theirs.id).length]).toEqual([1, 0]);
  });

  it("never echoes an HTML comment into a reply, so no reply can pass for the sticky comment", async () => {
    pr++;
    h.fake.pulls.set(pr, {
      headSha: HEAD,
      baseSha: BASE,
      baseRef: "master",
      state: "open",
      headRepo: REPOSITORY,
      headPushedAt: "2026-11-21T09:00:00Z",
    });
    h.fake.addCheckRun({
      name: "perf-gate",
      head_sha: HEAD,
      status: "completed",
      conclusion: "failure",
      output: { title: "red, blocking", summary: "measured" },
      app: GITHUB_ACTIONS,
    });
    await command(comment(`/perf rerun ${MARKER}`, "Codertocat"));
    await command(comment(`/perf ${MARKER}`, "Codertocat"));
    await command(comment(`/perf override ${MARKER} and <b>bold</b>`, "maintainer"));
    const bodies = ours().map((c) => c.body);
    expect(bodies).toHaveLength(3);
    for (const b of bodies) {
      expect(b).not.toContain("<!--");
      expect(b.startsWith("@")).toBe(true);
    }
    expect(bodies[2]).toContain("is overridden: &lt;!-- perf-gate:sticky --&gt; and &lt;b&gt;bold&lt;/b&gt;");
  });

  it("refuses a triager's rerun by the role GitHub names, and a writer's override", async () => {
    pr++;
    h.fake.pulls.set(pr, {
      headSha: HEAD,
      baseSha: BASE,
      baseRef: "master",
      state: "open",
      headRepo: REPOSITORY,
      headPushedAt: "2026-11-21T09:00:00Z",
    });
    await command(comment("/perf rerun", "triager"));
    await command(comment("/perf override fine", "Codertocat"));
    expect(ours().map((c) => c.body)).toEqual([
      "@triager `/perf rerun` refused: @triager has triage permission on this repository; `/perf rerun` needs write or higher.",
      "@Codertocat `/perf override` refused: @Codertocat has write permission on this repository; `/perf override` needs maintain or higher.",
    ]);
  });
});
