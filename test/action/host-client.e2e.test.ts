// The action's SSH client against a real host: a dropped connection mid-wait is reconnected
// and no progress line is lost or repeated; a promotion waits for a running experiment.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostClient, HostError } from "../../src/host/client";
import { asRoot, TestHost } from "../support/bench-host";
import { scratchDir } from "../support/scratch";

let host: TestHost;
let client: HostClient;

beforeAll(async () => {
  if (!asRoot) return;
  host = await TestHost.start({ lockWait: "1s" });
  const tarball = join(scratchDir("client"), "release.tar.gz");
  execFileSync("tar", ["-czf", tarball, "-C", host.release("fast", "champion"), "."]);
  await host.ssh("deploy champion 0000000", readFileSync(tarball));
  await host.ssh("promote 0000000", '{"command":["./start.sh"]}');
  client = new HostClient({
    host: "127.0.0.1",
    port: host.info.ssh_port,
    user: host.info.user,
    privateKey: readFileSync(host.info.key, "utf8"),
    knownHosts: host.info.known_hosts_line,
    backoffMs: 200,
  });
});
afterAll(() => {
  client?.close();
  host?.stop();
});

/** Kills sshd's per-connection processes: to the client, the network dropped. */
function dropConnections(): number {
  let killed = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    const stat = safeRead(`/proc/${pid}/stat`);
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === host.info.sshd_pid) {
      process.kill(Number(pid), "SIGKILL");
      killed++;
    }
  }
  return killed;
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

describe.skipIf(!asRoot)("HostClient", () => {
  it("reconnects a wait whose connection drops, losing and repeating nothing", async () => {
    const plan = {
      challenger_sha: "1234567",
      service: { command: ["./start.sh"] },
      loadgen: {
        workload: "w",
        rate: 100,
        slice_seconds: 0.8,
        pairs: 4,
        seed: 1,
        warmup_seconds: 0,
        requests: [{ path: "/work" }],
      },
    };
    await client.deploy("challenger", "1234567", host.release("fast", "challenger"));
    await client.start("run", "drop-1", plan, Date.now() + 60_000);
    const lines: string[] = [];
    let dropped = 0;
    const outcome = await client.wait("drop-1", (line) => {
      lines.push(line);
      if (line.includes("slice 2/8") && dropped === 0) dropped = dropConnections();
    });
    expect(dropped).toBeGreaterThan(0);
    expect(outcome.status).toBe("ok");
    const slices = lines.filter((l) => / slice \d+\/8 /.test(l));
    expect(slices.map((l) => l.match(/slice (\d+)\/8/)![1])).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"]);
    expect(new Set(lines).size).toBe(lines.length);
  });

  it("takes each arm's profile of a run that asked for one, through the forced command, and nothing else", async () => {
    const plan = {
      challenger_sha: "1234567",
      profile: true,
      service: { command: ["./start.sh"] },
      loadgen: {
        workload: "w",
        rate: 100,
        slice_seconds: 0.5,
        pairs: 4,
        seed: 1,
        warmup_seconds: 0,
        requests: [{ path: "/work" }, { path: "/report", weight: 0.1 }],
      },
    };
    await client.deploy("challenger", "1234567", host.release("fast", "challenger"));
    await client.start("run", "profiled-1", plan, Date.now() + 60_000);
    expect((await client.wait("profiled-1", () => {})).status).toBe("ok");
    const { message } = await client.result("profiled-1");
    // An installed host samples as the CI login, with the capabilities install.sh granted.
    expect(message.profiles?.status, message.profiles?.reason).toBe("recorded");
    expect(message.slices.every((s) => s.classes?.length === 2)).toBe(true);
    for (const arm of ["champion", "challenger"] as const) {
      const bytes = await client.profile("profiled-1", arm);
      expect(bytes.length).toBe(message.profiles!.arms![arm]!.bytes);
    }
    // The grammar names a run and an arm, never a file.
    for (const bad of [
      "profile profiled-1 ../champion",
      "profile profiled-1 champion.pb.gz",
      "profile profiled-1 loadgen",
    ]) {
      const r = await host.ssh(bad);
      expect(r.code, `${bad}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/refused/);
    }
  });

  it("refuses a host whose key does not match the pinned one", async () => {
    const other = host.info.known_hosts_line.replace(
      / \S+$/,
      " AAAAC3NzaC1lZDI1NTE5AAAAIE1FSBbwvIJUHhCvL6LzaSd3oF2KJ3CV63rAda+S/ktX",
    );
    const c = new HostClient({
      host: "127.0.0.1",
      port: host.info.ssh_port,
      user: host.info.user,
      privateKey: readFileSync(host.info.key, "utf8"),
      knownHosts: other,
    });
    await expect(c.status()).rejects.toMatchObject({ kind: "host_key" });
    await expect(c.status()).rejects.toThrow(/known-hosts input does not match/);
    c.close();
  });

  it("names a busy host after the bounded wait", async () => {
    const plan = {
      challenger_sha: "1234567",
      service: { command: ["./start.sh"] },
      loadgen: { workload: "w", rate: 50, slice_seconds: 1, pairs: 3, seed: 1, requests: [{ path: "/work" }] },
    };
    await client.start("run", "busy-1", plan, Date.now());
    const err = await client.start("run", "busy-2", plan, Date.now()).catch((e) => e as HostError);
    expect(err).toBeInstanceOf(HostError);
    expect((err as HostError).kind).toBe("busy");
    expect((err as HostError).message).toMatch(/host busy: ab busy-1 since/);
    await client.wait("busy-1", () => {});
  });

  it("a promotion waits for a running experiment instead of cutting it off, then swaps", async () => {
    const waiting = new HostClient({
      host: "127.0.0.1",
      port: host.info.ssh_port,
      user: host.info.user,
      privateKey: readFileSync(host.info.key, "utf8"),
      knownHosts: host.info.known_hosts_line,
      busyPollMs: 300,
    });
    const plan = {
      service: { command: ["./start.sh"] },
      loadgen: {
        workload: "w",
        rate: 50,
        slice_seconds: 1,
        pairs: 2,
        seed: 1,
        warmup_seconds: 0,
        requests: [{ path: "/work" }],
      },
    };
    await waiting.deploy("champion", "7654321", host.release("fast", "next"));
    await waiting.start("aa", "hold-aa-1", plan, Date.now());
    const promoted = await waiting.promote("7654321", { command: ["./start.sh"] }, Date.now() + 60_000);
    const promotedAt = Date.now();
    // The promotion returned only after the run had ended, and ended well.
    const result = (await waiting.result("hold-aa-1")).message;
    expect(result.outcome.status).toBe("ok");
    expect(promotedAt).toBeGreaterThan(Date.parse(result.outcome.ended));
    // No gate measured the build on this host: the history records the promotion with no step.
    expect(promoted).toBe("champion is now 7654321 (previous 0000000); no gate of it on this host: its step counts 0");
    const status = await waiting.status();
    expect([status.champion, status.previous]).toEqual(["7654321", "0000000"]);
    waiting.close();
  });
});
