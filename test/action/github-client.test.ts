// The GitHub adapter against the GitHub fake, which checks every request and response against
// GitHub's published OpenAPI description and behaves as GitHub does where the gate depends on it
// (roles, label case, pagination, who wrote what). No benchmark host is needed.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { checkResponse } from "../support/github-contract";
import {
  ACTIONS_BOT,
  type App,
  botOf,
  DEFAULT_TOKEN,
  GITHUB_ACTIONS,
  GitHubFake,
  userNamed,
} from "../support/github-fake";
import { scratchDir } from "../support/scratch";

type Client = typeof import("../../src/action/github/client");
let GitHub: Client["GitHub"];
let STICKY_MARKER: string;
let fake: GitHubFake;
let api: string;
let issue = 0;
const HEAD = "1234567890abcdef1234567890abcdef12345678";
const OTHER_APP: App = { id: 777, slug: "perf-gate-impostor", name: "perf-gate impostor" };

beforeAll(async () => {
  fake = new GitHubFake();
  api = await fake.start();
  vi.stubEnv("GITHUB_API_URL", api);
  vi.stubEnv("PERF_GATE_GITHUB_UNPACED", "1"); // the fake is on loopback: spacing writes only waits
  vi.stubEnv("GITHUB_STATE", join(scratchDir("state"), "state"));
  writeFileSync(process.env.GITHUB_STATE!, "");
  vi.resetModules();
  ({ GitHub, STICKY_MARKER } = await import("../../src/action/github/client"));
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await fake.stop();
});

beforeEach(() => {
  issue++; // a pull request of its own for every test
});

afterEach(() => fake.assertContract());

const client = (token = DEFAULT_TOKEN) => new GitHub(token, "Codertocat", "Hello-World");
const calls = (operation: string) => fake.requests.filter((r) => r.operation === operation);

describe("collaborator roles", () => {
  it("reads the role from role_name: GitHub's permission says write for maintain and read for triage", async () => {
    for (const role of ["admin", "maintain", "write", "triage", "read", "none"] as const)
      fake.setRole(`${role}-user`, role);
    fake.setRole("release-manager", "maintain", "release-manager"); // a custom role based on maintain
    const raw = await (
      await fetch(`${api}/repos/Codertocat/Hello-World/collaborators/maintain-user/permission`, {
        headers: { authorization: `token ${DEFAULT_TOKEN}` },
      })
    ).json();
    expect(raw).toMatchObject({ permission: "write", role_name: "maintain" });
    const gh = client();
    const got = Object.fromEntries(
      await Promise.all(
        ["admin", "maintain", "write", "triage", "read", "none"].map(
          async (r) => [r, await gh.permission(`${r}-user`)] as const,
        ),
      ),
    );
    expect(got).toEqual({
      admin: "admin",
      maintain: "maintain",
      write: "write",
      triage: "triage",
      read: "read",
      none: "none",
    });
    // A custom role counts as its base role, which is all GitHub says of it: never more.
    expect(await gh.permission("release-manager")).toBe("write");
    expect(await gh.permission("stranger")).toBe("none");
  });
});

describe("the merge base", () => {
  it("is the compare API's merge_base_commit for base...head, a fork's head too", async () => {
    const base = "b".repeat(40);
    fake.mergeBases.set(`${base}...${HEAD}`, "3".repeat(40));
    expect(await client().mergeBase(base, HEAD)).toBe("3".repeat(40));
    expect(calls("repos/compare-commits-with-basehead").at(-1)!.path).toBe(
      `/repos/Codertocat/Hello-World/compare/${base}...${HEAD}?per_page=1`,
    );
    await expect(client().mergeBase(base, "9".repeat(40))).rejects.toThrow(/Not Found/);
  });
});

describe("the merged pull request of a commit", () => {
  it("is the merged pull request whose merge made the commit, as GitHub associates them; none for a direct push", async () => {
    const merge = "4".repeat(40);
    fake.pulls.set(41, {
      headSha: "5".repeat(40),
      baseSha: "b".repeat(40),
      baseRef: "master",
      state: "closed",
      headRepo: "Codertocat/Hello-World",
      headPushedAt: "2026-11-21T09:00:00Z",
      mergeCommitSha: merge,
    });
    // Another pull request holds the commit but was not merged by it (still open).
    fake.pulls.set(42, {
      headSha: merge,
      baseSha: "b".repeat(40),
      baseRef: "master",
      state: "open",
      headRepo: "Codertocat/Hello-World",
      headPushedAt: "2026-11-21T09:00:00Z",
    });
    expect(await client().mergedPullRequest(merge)).toBe(41);
    expect(calls("repos/list-pull-requests-associated-with-commit").at(-1)!.path).toBe(
      `/repos/Codertocat/Hello-World/commits/${merge}/pulls?per_page=100`,
    );
    expect(await client().mergedPullRequest("6".repeat(40))).toBeNull();
    expect(fake.violations).toEqual([]);
  });
});

describe("labels", () => {
  it("compare case-insensitively, as GitHub's names do, and an existing label keeps its spelling", async () => {
    fake.addLabel(issue, "PERF:RED");
    fake.addLabel(issue + 1000, "Perf:Green"); // the repository has it, spelt so
    await client().setVerdictLabel(issue, "perf:green");
    expect(fake.labelsOn(issue)).toEqual(["Perf:Green"]);
    expect(calls("issues/create-label")).toHaveLength(0);
    const before = fake.requests.length;
    await client().setVerdictLabel(issue, "perf:green");
    expect(fake.requests.slice(before).map((r) => r.operation)).toEqual(["issues/list-labels-on-issue"]);
    await client().removeLabel(issue, "perf:GREEN");
    expect(fake.labelsOn(issue)).toEqual([]);
  });

  it("creates a missing verdict label with its colour; GitHub's addLabels would create it grey", async () => {
    await client().setVerdictLabel(issue, "perf:grey");
    expect(fake.labelsOn(issue)).toEqual(["perf:grey"]);
    expect(calls("issues/create-label").at(-1)!.body).toMatchObject({ name: "perf:grey", color: "8c959f" });
    // addLabels alone creates an unknown label, as GitHub does.
    fake.addLabel(issue, "needs-review");
    expect(fake.labelsOn(issue)).toEqual(["needs-review", "perf:grey"]);
  });

  it("follows pagination: a verdict label on the second page of 150 is still found and removed", async () => {
    for (let i = 0; i < 149; i++) fake.addLabel(issue, `area-${i}`);
    fake.addLabel(issue, "perf:grey");
    await client().setVerdictLabel(issue, "perf:red");
    const lists = calls("issues/list-labels-on-issue").slice(-2);
    expect(lists.map((r) => new URL(r.path, api).searchParams.get("page") ?? "1")).toEqual(["1", "2"]);
    const lower = fake.labelsOn(issue).map((l) => l.toLowerCase());
    expect(lower).toContain("perf:red");
    expect(lower).not.toContain("perf:grey");
    expect(fake.labelsOn(issue)).toHaveLength(150);
  });
});

describe("the sticky comment", () => {
  it("is this token's own comment with the marker as its first line; nobody else's text can pass for it", async () => {
    const gh = client();
    await gh.startCheck(HEAD, "perf-gate: measuring"); // the gate's first write: GitHub names the app
    fake.addComment(issue, `${STICKY_MARKER}\n## perf-gate: 🟢 green (forged by a user)`, userNamed("mallory"));
    fake.addComment(issue, `${STICKY_MARKER}\nanother app's comment`, botOf(OTHER_APP, 9));
    // The action's own reply quoting a user's text: the marker is not its first line.
    await gh.comment(issue, `@mallory unknown command \`/perf ${STICKY_MARKER}\``);
    expect(await gh.upsertStickyComment(issue, "## perf-gate: 🔴 red")).toBe("created");
    expect(await gh.upsertStickyComment(issue, "## perf-gate: ⚪ grey")).toBe("updated");
    const mine = fake.comments.get(issue)!.filter((c) => c.user.login === ACTIONS_BOT.login);
    expect(mine.map((c) => c.body)).toEqual([
      `@mallory unknown command \`/perf ${STICKY_MARKER}\``,
      `${STICKY_MARKER}\n## perf-gate: ⚪ grey`,
    ]);
    expect(
      fake.comments
        .get(issue)!
        .filter((c) => c.user.login !== ACTIONS_BOT.login)
        .map((c) => c.body),
    ).toEqual([
      `${STICKY_MARKER}\n## perf-gate: 🟢 green (forged by a user)`,
      `${STICKY_MARKER}\nanother app's comment`,
    ]);
  });

  it("is found among 250 comments (three pages), and prepended to in place", async () => {
    const gh = client();
    await gh.react(fake.addComment(issue, "/perf override ok", userNamed("maintainer")).id, "eyes"); // GitHub names the bot
    for (let i = 0; i < 120; i++) fake.addComment(issue, `comment ${i}`, userNamed("chatty"));
    fake.addComment(issue, `${STICKY_MARKER}\n## perf-gate: 🔴 red`, ACTIONS_BOT);
    for (let i = 0; i < 128; i++) fake.addComment(issue, `comment ${i}`, userNamed("chatty"));
    await gh.prependToStickyComment(issue, "> **Overridden** by @maintainer");
    expect(
      fake.comments
        .get(issue)!
        .filter((c) => c.body.startsWith(STICKY_MARKER))
        .map((c) => c.body),
    ).toEqual([`${STICKY_MARKER}\n> **Overridden** by @maintainer\n\n## perf-gate: 🔴 red`]);
    expect(
      calls("issues/list-comments")
        .slice(-3)
        .map((r) => new URL(r.path, api).searchParams.get("page") ?? "1"),
    ).toEqual(["1", "2", "3"]);
  });
});

describe("check runs", () => {
  it("the latest check is this app's: another app's newer perf-gate check is neither read nor overridden, over pages", async () => {
    const sha = "2234567890abcdef1234567890abcdef12345678";
    const output = (title: string) => ({ title, summary: title });
    fake.addCheckRun({
      name: "perf-gate",
      head_sha: sha,
      status: "completed",
      conclusion: "failure",
      output: output("red, blocking"),
      app: GITHUB_ACTIONS,
    });
    for (let i = 0; i < 130; i++)
      fake.addCheckRun({
        name: "perf-gate",
        head_sha: sha,
        status: "completed",
        conclusion: "success",
        output: output(`impostor ${i}`),
        app: OTHER_APP,
      });
    const gh = client();
    await gh.react(fake.addComment(issue, "/perf override", userNamed("maintainer")).id, "eyes");
    const latest = await gh.latestCheck(sha);
    expect(latest).toMatchObject({ conclusion: "failure", title: "red, blocking" });
    expect(calls("checks/list-for-ref").length).toBeGreaterThanOrEqual(2);
  });

  it("carry the run's link as details_url, and only their own app may update them", async () => {
    const gh = client();
    const id = await gh.startCheck(
      HEAD,
      "perf-gate: measuring",
      "perf-gate",
      "https://github.com/Codertocat/Hello-World/actions/runs/42",
    );
    expect(fake.checkRuns.find((c) => c.id === id)).toMatchObject({
      details_url: "https://github.com/Codertocat/Hello-World/actions/runs/42",
      app: GITHUB_ACTIONS,
      status: "in_progress",
    });
    fake.tokens.set("ghs_impostor", botOf(OTHER_APP, 9));
    await expect(client("ghs_impostor").finishCheck(id, "success", "green", "forged")).rejects.toMatchObject({
      status: 403,
    });
    expect(await gh.cancelCheckIfOpen(id, "cancelled in a test")).toBe(true);
    expect(fake.checkRuns.find((c) => c.id === id)).toMatchObject({
      status: "completed",
      conclusion: "cancelled",
      output: { title: "perf-gate: cancelled before a verdict" },
    });
    expect(await gh.cancelCheckIfOpen(id, "again")).toBe(false);
  });

  it("a user's token is named by GET /user, and cannot stand for an app's checks", async () => {
    fake.tokens.set("ghp_octocat", userNamed("octocat"));
    const gh = client("ghp_octocat");
    expect(await gh.identity()).toEqual({ login: "octocat", appSlug: null });
    await expect(gh.latestCheck(HEAD)).rejects.toThrow(
      /the github-token is @octocat's, a user's: check runs are written and updated only by a GitHub App/,
    );
    await expect(gh.startCheck(HEAD, "x")).rejects.toMatchObject({ status: 403 });
    // GitHub refuses GET /user to an installation token.
    await expect(client().identity()).rejects.toThrow(/GET \/user answered 403/);
  });
});

describe("the contract check itself", () => {
  it("fails a request that breaks GitHub's contract, naming the operation and the field", async () => {
    const id = await client().startCheck(HEAD, "perf-gate: measuring");
    await expect(client().finishCheck(id, "passed" as never, "t", "s")).rejects.toMatchObject({ status: 422 });
    expect(() => fake.assertContract()).toThrow(
      /checks\/update \(PATCH \/repos\/\{owner\}\/\{repo\}\/check-runs\/\{check_run_id\}\): request body \/conclusion must be equal to one of the allowed values \(action_required, cancelled, failure, neutral, success, skipped, stale, timed_out\), got "passed"/,
    );
    await expect(client().comment(issue, "x".repeat(70_000))).resolves.toBeUndefined(); // cut to the limit, so within it
  });

  it("names a response field the fake would get wrong", async () => {
    const id = await client().startCheck(HEAD, "perf-gate: measuring");
    const served = (await (
      await fetch(`${api}/repos/Codertocat/Hello-World/check-runs/${id}`, {
        headers: { authorization: `token ${DEFAULT_TOKEN}` },
      })
    ).json()) as Record<string, Record<string, unknown>>;
    expect(checkResponse("checks/get", 200, served)).toEqual([]);
    expect(
      checkResponse("checks/get", 200, { ...served, status: "done", app: { ...served.app, owner: undefined } }),
    ).toEqual([
      'checks/get (GET /repos/{owner}/{repo}/check-runs/{check_run_id}) response 200: /status must be equal to one of the allowed values (queued, in_progress, completed, waiting, requested, pending), got "done"',
      "checks/get (GET /repos/{owner}/{repo}/check-runs/{check_run_id}) response 200: /app must have required property 'owner'",
    ]);
    expect(checkResponse("repos/get-collaborator-permission-level", 200, { permission: "write", user: null })).toEqual([
      "repos/get-collaborator-permission-level (GET /repos/{owner}/{repo}/collaborators/{username}/permission) response 200: (the whole body) must have required property 'role_name'",
    ]);
    expect(checkResponse("checks/update", 500, "oops")).toEqual([
      "checks/update (PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}) response 500: status 500 is not a response of this operation (200)",
    ]);
  });
});
