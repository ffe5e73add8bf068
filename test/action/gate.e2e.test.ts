// The PR gate end to end: dist/index.js under Node 24, real pull_request payloads from
// @octokit/webhooks-examples, a GitHub fake on loopback, and a real sshd + perf-host serving
// the example service as champion.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { aaAllowingChance } from "../support/aa-by-chance";
import { ActionHarness, E2E_CONFIG as CONFIG, examplePayload } from "../support/action-harness";
import { asRoot, SLOW_BUILD_MS, type TestHost } from "../support/bench-host";
import type { GitHubFake } from "../support/github-fake";
import { skipIfDisturbed, untilResolved } from "../support/machine-too-busy";

type Payload = {
  action: string;
  pull_request: {
    number: number;
    head: { sha: string; repo: { full_name: string; fork: boolean } };
    base: { sha: string };
  };
  label?: { name: string };
  sender: { login: string };
};
const real = (action: string) => examplePayload<Payload>("pull_request", (e) => e.action === action);

let h: ActionHarness;
let fake: GitHubFake;
let host: TestHost;
const opened = real("opened");
const PR = opened.pull_request.number;
const BASE = opened.pull_request.base.sha;

const inputs = (artifact: string) => h.inputs("gate", { artifact });

/** GitHub's view of the pull request follows the event, as it would after the push. */
function syncPull(p: Payload) {
  fake.pulls.set(p.pull_request.number, {
    headSha: p.pull_request.head.sha,
    baseSha: p.pull_request.base.sha,
    baseRef: "master",
    state: "open",
    headRepo: p.pull_request.head.repo.full_name,
    headPushedAt: "2019-05-15T15:20:00Z",
  });
}

async function gate(payload: Payload, artifact: string, eventName = "pull_request") {
  syncPull(payload);
  const run = await h.run(inputs(artifact), eventName, payload);
  console.log(
    `[gate] ${payload.action} ${payload.pull_request.head.sha.slice(0, 7)}: ${fake.checkRuns.at(-1)?.output.title}`,
  );
  return run;
}

function withHead(p: Payload, sha: string): Payload {
  p.pull_request.head.sha = sha;
  return p;
}

const acceptedLogins = () => h.acceptedLogins();
/** Runs the host has started so far. */
const hostRuns = () => readdirSync(join(host.info.root, "runs")).length;
const lastCheck = () => h.lastCheck();

beforeAll(async () => {
  if (!asRoot) return;
  h = await ActionHarness.start("0".repeat(40));
  ({ fake, host } = h);
  fake.files.set(`.github/perf-gate.yml@${BASE}`, CONFIG);
});

afterAll(async () => {
  await h?.stop();
});

afterEach(() => h?.fake.assertContract());

describe.skipIf(!asRoot)("the PR gate", () => {
  it("labels a slower challenger red, fails its check and posts a sticky comment; a second run updates it", async (ctx) => {
    const slow = host.release("slow", "slow");
    // While the machine's noise hides the slow build's slowdown, a push of the same head measures
    // it again, pooled with the runs before (the shared rule).
    const samePush = () => gate(real("synchronize"), slow);
    const { run, runs } = await untilResolved(ctx, SLOW_BUILD_MS, samePush, await gate(real("opened"), slow));
    expect(run.outputs.verdict, run.stdout).toBe("red");
    expect(run.outputs.blocking).toBe("true");
    expect(run.code).toBe(1);
    expect(Number(run.outputs["estimate-ms"])).toBeGreaterThan(0.2);
    expect(Number(run.outputs["ci-low-ms"])).toBeGreaterThan(0);
    // 6 measured a run; a pair the generator fell behind in is dropped and named, at most half.
    expect(Number(run.outputs.pairs)).toBeGreaterThanOrEqual(3 * runs);
    expect(Number(run.outputs.pairs)).toBeLessThanOrEqual(6 * runs);
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toContain(
      "### perf-gate: 🔴 red, blocking — challenger is ",
    );
    expect(JSON.parse(readFileSync(run.outputs["result-path"]!, "utf8"))[0].plan.builds.challenger_sha).toBe(
      opened.pull_request.head.sha,
    );
    expect(run.summary).toContain("perf-gate: 🔴 red");

    const check = lastCheck();
    expect(check).toMatchObject({
      name: "perf-gate",
      head_sha: opened.pull_request.head.sha,
      status: "completed",
      conclusion: "failure",
    });
    expect(check.output!.title).toMatch(/^red, blocking: challenger is [\d.]+ ms slower at p90 \([\d.]+% CI/); // 97.5% on a first look
    expect(check.output.summary!.length).toBeLessThanOrEqual(65_535);
    expect(fake.labelsOn(PR)).toEqual(["perf:red"]);
    expect(fake.comments.get(PR)).toHaveLength(1);
    expect(fake.comments.get(PR)![0]!.body).toMatch(
      /^<!-- perf-gate:sticky -->\n### perf-gate: 🔴 red, blocking — challenger is [\d.]+ ms slower at p90/,
    );
    expect(check.details_url).toMatch(/^https:\/\/github.com\/Codertocat\/Hello-World\/actions\/runs\/\d+$/);
    // The verdict names the host that measured it, as the host input names it.
    const measuredOn = `127.0.0.1:${host.info.ssh_port}`;
    expect(run.outputs.host).toBe(measuredOn);
    expect(check.output.summary).toContain(
      `challenger \`${opened.pull_request.head.sha.slice(0, 7)}\` vs champion \`0000000\` on host \`${measuredOn}\` · [workflow run](${check.details_url})`,
    );

    // A push of the same head pools with the runs before and updates the one comment (unless the
    // first run's noise had it measured again already).
    const { run: again, runs: all } = runs > 1 ? { run, runs } : await untilResolved(ctx, SLOW_BUILD_MS, samePush);
    expect(again.outputs.verdict).toBe("red");
    expect(fake.comments.get(PR)).toHaveLength(1);
    expect(fake.requests.filter((r) => r.method === "PATCH" && r.path.includes("/issues/comments/"))).toHaveLength(
      all - 1,
    );
  });

  it("does not call an identical challenger red, and moves the label", async (ctx) => {
    const same = host.release("fast", "same");
    const run = await aaAllowingChance(
      async (attempt) => {
        const r = await gate(withHead(real("synchronize"), String(1 + attempt).repeat(40)), same);
        skipIfDisturbed(ctx, r);
        return r;
      },
      (r) => r.outputs.verdict === "red",
    );
    expect(["grey", "green"], run.stdout).toContain(run.outputs.verdict);
    expect(run.code).toBe(0);
    expect(lastCheck().conclusion).toBe("success");
    expect(fake.labelsOn(PR)).toEqual([`perf:${run.outputs.verdict}`]);
  });

  it("never lets an unapproved fork reach the host, and says why", async (ctx) => {
    const fork = (p: Payload) => {
      p.pull_request.head.sha = "f".repeat(40); // a commit of its own, not the earlier tests'
      p.pull_request.head.repo.full_name = "forker/Hello-World";
      p.pull_request.head.repo.fork = true;
      return p;
    };
    const logins = acceptedLogins();
    const run = await gate(fork(real("opened")), host.release("fast", "fork"), "pull_request_target");
    expect(run.code).toBe(0);
    expect(run.outputs.verdict).toBe("skipped");
    expect(lastCheck()).toMatchObject({
      conclusion: "action_required",
      output: { title: "perf-gate: waiting for approval" },
    });
    expect(lastCheck().output!.summary).toMatch(
      /comes from a fork.*write permission approves head [0-9a-f]{7}: add the perf:approved label/,
    );

    // The label from a user without write permission does not approve.
    fake.setRole("Codertocat", "read");
    const labeled = fork(real("labeled"));
    labeled.label = { name: "perf:approved" };
    const refused = await gate(labeled, host.release("fast", "fork"), "pull_request_target");
    expect(refused.outputs.verdict).toBe("skipped");
    expect(lastCheck().output!.summary).toMatch(/added by a user with read permission/);
    expect(acceptedLogins()).toBe(logins);

    // A label for anything else decides nothing: no check, no host.
    const checks = fake.checkRuns.length;
    const other = fork(real("labeled"));
    other.label = { name: "documentation" };
    expect((await gate(other, host.release("fast", "fork"), "pull_request_target")).outputs.verdict).toBe("skipped");
    expect(fake.checkRuns).toHaveLength(checks);
    expect(acceptedLogins()).toBe(logins);

    // From a writer, it does: the run reaches the host.
    fake.setRole("Codertocat", "write");
    const approved = await gate(labeled, host.release("fast", "fork"), "pull_request_target");
    skipIfDisturbed(ctx, approved);
    expect(["grey", "green", "red"]).toContain(approved.outputs.verdict);
    expect(acceptedLogins()).toBeGreaterThan(logins);
  });

  it("measures only the head a writer approved: a push after the approval is refused before the host, and the approval removed", async () => {
    const approved = "1234567890abcdef1234567890abcdef12345678";
    const pushed = "2234567890abcdef1234567890abcdef12345678";
    const labeled = withHead(real("labeled"), approved);
    labeled.pull_request.head.repo.full_name = "forker/Hello-World";
    labeled.pull_request.head.repo.fork = true;
    labeled.label = { name: "perf:approved" };
    fake.setRole(labeled.sender.login, "write");
    fake.addLabel(PR, "perf:approved");
    // The access job saw 1234567 as the head and the build built it; then the fork pushed 2234567.
    syncPull(withHead(structuredClone(labeled), pushed));
    const logins = acceptedLogins();
    const run = await h.run(inputs(host.release("fast", "fork")), "pull_request_target", labeled);
    expect(run.code, run.stdout).toBe(0);
    expect(run.outputs.verdict).toBe("skipped");
    expect(acceptedLogins()).toBe(logins);
    const check = lastCheck();
    expect(check).toMatchObject({
      head_sha: approved,
      status: "completed",
      conclusion: "action_required",
      output: { title: "perf-gate: approved 1234567, head is now 2234567: approve again" },
    });
    expect(check.output!.summary).toMatch(/head is now 2234567: a push landed after the approval/);
    expect(fake.labelsOn(PR)).not.toContain("perf:approved");
  });

  it("with comparison_base merge-base, measures the head against its merge base, built and deployed for the run", async (ctx) => {
    // Main moved on (the champion is the fast build) since this branch left it at 3333333, a
    // slow build; the branch changed nothing. Against the champion it would read red, a change
    // main made; against its merge base it reads no change.
    const base = "b".repeat(40);
    const mergeBase = "3".repeat(40);
    fake.files.set(`.github/perf-gate.yml@${base}`, `${CONFIG}comparison_base: merge-base\n`);
    const branch = (head: string) => {
      const p = withHead(real("synchronize"), head);
      p.pull_request.base.sha = base;
      fake.mergeBases.set(`${base}...${head}`, mergeBase);
      return p;
    };
    const slow = host.release("slow", "branch");
    const baseBuild = host.release("slow", "merge-base");

    // The build of the merge base is required, and must be of that commit.
    const logins = acceptedLogins();
    const runsBefore = hostRuns();
    let run = await gate(branch("4".repeat(40)), slow);
    expect(run.code).toBe(1);
    expect(lastCheck().output).toMatchObject({ title: "perf-gate: configuration error" });
    expect(lastCheck().output.summary).toMatch(
      /input base-artifact: comparison_base is merge-base and the merge base 3333333 of 4444444 is not the host's champion 0000000/,
    );
    run = await h.run(
      h.inputs("gate", { artifact: slow, "base-artifact": baseBuild, "base-sha": "5".repeat(40) }),
      "pull_request",
      branch("4".repeat(40)),
    );
    expect(lastCheck().output.summary).toMatch(/input base-sha: .*but base-artifact is a build of 5555555/);
    expect(hostRuns()).toBe(runsBefore);
    expect(acceptedLogins()).toBeGreaterThan(logins); // it asked the host for its champion, and ran nothing

    let head = "";
    run = await aaAllowingChance(
      async (attempt) => {
        head = (attempt === 0 ? "4" : "6").repeat(40);
        syncPull(branch(head));
        const r = await h.run(
          h.inputs("gate", { artifact: slow, "base-artifact": baseBuild, "base-sha": mergeBase }),
          "pull_request",
          branch(head),
        );
        skipIfDisturbed(ctx, r);
        return r;
      },
      (r) => r.outputs.verdict === "red",
    );
    console.log(`[gate] ${head.slice(0, 7)} vs merge base 3333333: ${lastCheck().output.title}`);
    expect(["grey", "green"], run.stdout).toContain(run.outputs.verdict);
    const builds = JSON.parse(readFileSync(run.outputs["result-path"]!, "utf8"))[0].plan.builds;
    expect(builds).toMatchObject({ kind: "ab", champion_sha: mergeBase, challenger_sha: head, base: "merge-base" });
    expect(lastCheck().output.summary).toContain(`challenger \`${head.slice(0, 7)}\` vs merge base \`3333333\``);
    expect(await h.championVersion()).toBe("fast v1");
  });

  it("fails a bad config with an error that names it, before connecting to the host", async () => {
    const cases: [string, RegExp][] = [
      [
        CONFIG.replace("warmup_seconds: 2", "warmup_seconds: 2\nwarmup_sconds: 3"),
        /\.github\/perf-gate\.yml:9: warmup_sconds: unknown key/,
      ],
      [CONFIG.replace("budget_ms: 20", "budget_ms: -20"), /\.github\/perf-gate\.yml:6: slo\.budget_ms: /],
      [CONFIG.replace('command: ["./start.sh"]', "command: []"), /\.github\/perf-gate\.yml:2: service\.command: /],
    ];
    const logins = acceptedLogins();
    for (const [config, message] of cases) {
      const base = "a".repeat(40);
      fake.files.set(`.github/perf-gate.yml@${base}`, config);
      const p = real("opened");
      p.pull_request.base.sha = base;
      const run = await gate(p, host.release("fast", "cfg"));
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(message);
      expect(lastCheck()).toMatchObject({ conclusion: "failure", output: { title: "perf-gate: configuration error" } });
      expect(lastCheck().output!.summary).toMatch(message);
      expect(run.outputs.verdict).toBe("error");
    }
    expect(acceptedLogins()).toBe(logins);
  });

  it("a champion that fails every request is could not measure naming it, and the check's summary says what was measured", async () => {
    // The config asks for an endpoint the champion's build does not have; the pull request adds it.
    const base = "c".repeat(40);
    fake.files.set(
      `.github/perf-gate.yml@${base}`,
      CONFIG.replace("path: /work?key={{rand 100}}", "path: /new-endpoint"),
    );
    const p = withHead(real("opened"), "7".repeat(40));
    p.pull_request.base.sha = base;
    const adds = host.release("fast", "adds-endpoint");
    writeFileSync(
      join(adds, "server.py"),
      'import http.server,os\nclass H(http.server.BaseHTTPRequestHandler):\n  def do_GET(self):\n    self.send_response(200); self.end_headers(); self.wfile.write(b"ok")\n  def log_message(self,*a): pass\nhttp.server.ThreadingHTTPServer(("127.0.0.1",int(os.environ["PORT"])),H).serve_forever()\n',
    );
    writeFileSync(join(adds, "start.sh"), "#!/bin/sh\necho new endpoint served\nexec python3 server.py\n", {
      mode: 0o755,
    });
    const run = await gate(p, adds);
    expect(run.outputs.verdict, run.stdout).toBe("error");
    const check = lastCheck();
    expect(check.conclusion).toBe("failure");
    expect(check.output!.title).toMatch(/^perf-gate could not measure: the champion failed (\d+) of \1 requests$/);
    const summary = check.output!.summary!;
    expect(summary).toContain("an infrastructure failure, not a performance verdict");
    expect(summary).toMatch(
      /### ⚠️ perf-gate could not measure\n\ncould not measure: the champion failed \d+ of \d+ requests of workload work @ 200 req\/s \(4xx \d+\)/,
    );
    expect(summary).toContain("challenger's log tail");
    expect(summary).toContain("new endpoint served");
    expect(readFileSync(run.outputs["report-path"]!, "utf8")).toContain(summary.slice(summary.indexOf("### ⚠️")));
    expect(JSON.parse(readFileSync(join(dirname(run.outputs["report-path"]!), "analysis.json"), "utf8"))).toMatchObject(
      { verdict: "could_not_measure" },
    );
    expect(fake.labelsOn(PR)).toEqual([]);
  });

  it("reports an unreachable host as an infrastructure failure, not a verdict", async () => {
    const p = real("opened");
    fake.setLabels(PR, ["perf:green"]); // a verdict about an earlier head
    syncPull(p);
    // Port 1, pinned (the key checked up front is the host's; nothing listens there).
    const pinned = host.info.known_hosts_line.replace(/^\[127\.0\.0\.1\]:\d+/, "[127.0.0.1]:1");
    const run = await h.run(
      {
        ...inputs(host.release("fast", "x")),
        port: "1",
        "known-hosts": pinned,
        "on-infrastructure-failure": "neutral",
      },
      "pull_request",
      p,
    );
    expect(run.code).toBe(0);
    expect(run.outputs.verdict).toBe("error");
    expect(lastCheck()).toMatchObject({
      conclusion: "neutral",
      output: { title: "perf-gate could not measure (unreachable)" },
    });
    expect(lastCheck().output!.summary).toContain("an infrastructure failure, not a performance verdict");
    expect(fake.labelsOn(PR)).toEqual([]);
  });
});
