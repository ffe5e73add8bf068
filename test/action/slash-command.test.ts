// The /perf comment grammar and who may use it: pure, so tested without GitHub.
import { describe, expect, it } from "vitest";
import type { Permission } from "../../src/action/approval";
import { authorizeCommand, parseSlashCommand } from "../../src/action/slash-command";

describe("parsing a /perf comment", () => {
  it("reads only the first line", () => {
    expect(parseSlashCommand("/perf rerun")).toEqual({ kind: "rerun" });
    expect(parseSlashCommand("  /perf   rerun  \r\nbecause the host was busy")).toEqual({ kind: "rerun" });
    expect(parseSlashCommand("thanks!\n/perf rerun")).toEqual({ kind: "none" });
    expect(parseSlashCommand("> /perf rerun")).toEqual({ kind: "none" });
    expect(parseSlashCommand("/performance is fine")).toEqual({ kind: "none" });
    expect(parseSlashCommand("")).toEqual({ kind: "none" });
  });

  it("takes the rest of the first line as the override's reason", () => {
    expect(parseSlashCommand("/perf override the new index is worth 0.3 ms\nsecond line")).toEqual({
      kind: "override",
      reason: "the new index is worth 0.3 ms",
    });
  });

  it("answers bad syntax with what is wrong and what would be right", () => {
    const invalid = (body: string) => {
      const c = parseSlashCommand(body);
      if (c.kind !== "invalid") throw new Error(`${body}: ${c.kind}`);
      return c.message;
    };
    expect(invalid("/perf")).toMatch(/needs a command: `\/perf rerun`.*`\/perf override <reason>`/);
    expect(invalid("/perf rerun now")).toBe("`/perf rerun` takes no arguments (got `now`)");
    expect(invalid("/perf override")).toMatch(/needs a reason, e\.g\./);
    expect(invalid(`/perf override ${"x".repeat(501)}`)).toMatch(/501 characters; at most 500/);
    expect(invalid("/perf Rerun")).toMatch(/^unknown command `\/perf Rerun`/);
    // User text echoed back cannot ping anyone or break out of the code span.
    expect(invalid("/perf @everyone`x`")).toBe(
      "unknown command `/perf everyonex`; the commands are `/perf rerun` (write permission) or `/perf override <reason>` (maintain or admin permission)",
    );
  });
});

describe("who may use a command", () => {
  const ladder: Permission[] = ["none", "read", "triage", "write", "maintain", "admin"];
  const user = { login: "octocat", isBot: false };

  it("rerun needs write, override maintain", () => {
    ladder.forEach((p, i) => {
      expect(authorizeCommand("rerun", user, p).allowed).toBe(i >= 3);
      expect(authorizeCommand("override", user, p).allowed).toBe(i >= 4);
    });
    expect(authorizeCommand("rerun", user, null)).toEqual({
      allowed: false,
      reason: "@octocat has no permission on this repository; `/perf rerun` needs write or higher",
    });
  });

  it("never takes a command from a bot, whatever its permission", () => {
    expect(authorizeCommand("rerun", { login: "renovate[bot]", isBot: true }, "admin")).toEqual({
      allowed: false,
      reason: "@renovate[bot] is a bot; /perf commands are taken only from people",
    });
  });
});
