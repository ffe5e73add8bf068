// The pool as a user writes it (host input, --host) and the known-hosts lines that must pin each
// host: what is accepted, and what each bad entry is told.
import { describe, expect, it } from "vitest";
import { checkKnownHosts, knownHostsPattern, parseHostList } from "../../src/host/targets";

describe("parseHostList", () => {
  it("takes one host, or several separated by commas, spaces or lines, each with an optional port", () => {
    expect(parseHostList("bench-1.example.com", 22, "input host")).toEqual([
      { host: "bench-1.example.com", port: 22, name: "bench-1.example.com" },
    ]);
    expect(parseHostList(" a.example, 10.0.0.5:2222\nb.example ", 22, "input host").map((h) => h.name)).toEqual([
      "a.example",
      "10.0.0.5:2222",
      "b.example",
    ]);
    // The port input is every host's default; a host's own port wins.
    expect(parseHostList("a,b:2201", 2200, "input host").map((h) => [h.host, h.port, h.name])).toEqual([
      ["a", 2200, "a:2200"],
      ["b", 2201, "b:2201"],
    ]);
  });

  it("takes a login of the host's own before @", () => {
    expect(parseHostList("pgci01@127.0.0.1:2201, b.example", 22, "input host")).toEqual([
      { host: "127.0.0.1", port: 2201, user: "pgci01", name: "127.0.0.1:2201" },
      { host: "b.example", port: 22, name: "b.example" },
    ]);
    expect(() => parseHostList("Root;x@a.example", 22, "input host")).toThrow(/"Root;x@a.example" is not a host/);
    expect(() => parseHostList("@a.example", 22, "input host")).toThrow(/"@a.example" is not a host/);
  });

  it("takes IPv6 addresses bare, or bracketed with a port", () => {
    expect(
      parseHostList("fd00::5, [fd00::6]:2222, [::1]", 22, "input host").map((h) => [h.host, h.port, h.name]),
    ).toEqual([
      ["fd00::5", 22, "fd00::5"],
      ["fd00::6", 2222, "[fd00::6]:2222"],
      ["::1", 22, "::1"],
    ]);
  });

  it.each([
    ["bench;rm -rf /", /input host: "bench;rm" is not a host/],
    ["a.example:0", /"a.example:0" is not a host/],
    ["a.example:70000", /"a.example:70000" is not a host/],
    ["-oProxyCommand=x", /"-oProxyCommand=x" is not a host/],
    ["[zz::1]:22", /"\[zz::1\]:22" is not a host/],
    ["a.example, A.example:22", /input host: A.example is listed twice/],
    [Array.from({ length: 33 }, (_, i) => `h${i}`).join(","), /input host: 33 hosts; a pool holds at most 32/],
  ])("refuses %j", (text, error) => {
    expect(() => parseHostList(text, 22, "input host")).toThrow(error);
  });
});

describe("checkKnownHosts", () => {
  const pool = parseHostList("a.example, 127.0.0.1:2201, [fd00::6]:2222", 22, "input host");

  it("asks a line per host, in the form ssh looks it up by", () => {
    expect(pool.map(knownHostsPattern)).toEqual(["a.example", "[127.0.0.1]:2201", "[fd00::6]:2222"]);
    const lines =
      "a.example ssh-ed25519 AAAA1\n[127.0.0.1]:2201 ssh-ed25519 AAAA2\n# a comment\n[fd00::6]:2222,other ecdsa-sha2-nistp256 AAAA3\n";
    expect(() => checkKnownHosts(lines, pool, "input known-hosts")).not.toThrow();
    expect(() =>
      checkKnownHosts("*.example ssh-ed25519 A\n[127.0.0.1]:* ssh-ed25519 B\n[fd00::6]:2222 ssh-ed25519 C", pool, "f"),
    ).not.toThrow();
  });

  it("names the host that has no line, and the line it needs", () => {
    const lines = "a.example ssh-ed25519 AAAA1\n127.0.0.1 ssh-ed25519 AAAA2\n";
    expect(() => checkKnownHosts(lines, pool, "input known-hosts")).toThrow(
      `input known-hosts: no line pins 127.0.0.1:2201's host key: give one line per host of the pool, as install.sh prints it ("[127.0.0.1]:2201 ssh-ed25519 AAAA…")`,
    );
    // A negated pattern pins nothing.
    expect(() => checkKnownHosts("!a.example ssh-ed25519 A", pool.slice(0, 1), "f")).toThrow(/no line pins a.example/);
  });

  it("leaves hashed lines to ssh: it cannot tell whose they are", () => {
    expect(() => checkKnownHosts("|1|c2FsdA==|aGFzaA== ssh-ed25519 AAAA", pool, "input known-hosts")).not.toThrow();
  });
});
