// perf-gate history --from: a history file becomes the page (and back to JSON); a file that is
// not a history is refused with the field and why, before any of it is drawn.
import { existsSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { perfGate } from "../support/cli";
import { busyHistory } from "../support/history";
import { scratchDir } from "../support/scratch";

const dir = scratchDir("history-cli");

const write = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe("perf-gate history --from", () => {
  it("writes the page and the history, which reads back the same", async () => {
    const history = busyHistory();
    const from = write("history.json", JSON.stringify(history));
    const out = join(dir, "page.html");
    const json = join(dir, "again.json");
    const r = await perfGate(["history", "--from", from, "--out", out, "--json", json]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`page\\.html: ${history.entries.length} entries \\(\\d+ KiB\\)`));
    expect(readFileSync(out, "utf8")).toContain('<table class="data" id="promotions">');
    expect(JSON.parse(readFileSync(json, "utf8"))).toEqual(history);
  });

  const good = JSON.stringify(busyHistory());
  const hostile: Record<string, [string, RegExp]> = {
    "corrupt JSON": [good.slice(0, 500), /: not valid JSON \(/],
    "not an object": ["[1, 2, 3]", /not a perf-gate history \(a JSON object with schema_version/],
    "no version": [
      good.replace('"schema_version":1,"time"', '"time"'),
      /not a perf-gate history: schema_version: required/,
    ],
    "a future version": [
      good.replace('"schema_version":1,"time"', '"schema_version":2,"time"'),
      /history schema_version 2 is newer than this perf-gate reads \(1\): it was written by a newer perf-host; upgrade perf-gate/,
    ],
    "an entry of another version": [
      good.replace('"schema_version":1,"kind"', '"schema_version":3,"kind"'),
      /entries\[0\]\.schema_version: Invalid input: expected 1/,
    ],
    "a kind without its record": [
      good.replace('"kind":"promotion"', '"kind":"drift"'),
      /entries\[0\]: a drift entry carries drift and nothing else \(it carries change\)/,
    ],
    "an interval that lies": [
      good.replace(/("estimate_ms":[^,]+,)"ci_ms":\[[^\]]*\]/, '$1"ci_ms":[5,6]'),
      /gate\.comparisons\[0\]\.ci_ms: \[5, 6\] does not hold the estimate/,
    ],
    "a step that leaves main no latency": [
      good.replace(/"estimate_ms":[^,]+,"ci_ms":\[[^\]]*\]/, '"estimate_ms":-20,"ci_ms":[-21,-19]'),
      /gate\.comparisons\[0\]\.estimate_ms: -20 takes the champion_ms \d+(\.\d+)? ms to no latency \(at most 0 ms\)/,
    ],
    "a time that is no date": [good.replace(/"time":"[^"]*"/, '"time":"yesterday"'), /time: not a date: "yesterday"/],
    "a script in a SHA": [
      good.replace(/"sha":"[0-9a-f]+"/, '"sha":"</script><script>alert(1)</script>"'),
      /ancestors\[0\]\.sha: 7-40 lowercase hex characters/,
    ],
    "a link that breaks out": [
      good.replace(/"url":"[^"]*"/, '"url":"https://x/\\"><img src=x onerror=alert(1)>"'),
      /\.url: Invalid string/,
    ],
  };
  it("refuses to write the page over its own history, or the JSON over the page, and keeps the file", async () => {
    const from = write("kept.json", JSON.stringify(busyHistory()));
    const before = readFileSync(from, "utf8");
    for (const [args, want] of [
      [["--out", from], /--out .*kept\.json: the same file as --from .*kept\.json; name another/],
      [["--out", join(dir, "p.html"), "--json", join(dir, "p.html")], /--json .*p\.html: the same file as --out/],
    ] as const) {
      const r = await perfGate(["history", "--from", from, ...args]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(want);
    }
    expect(readFileSync(from, "utf8")).toBe(before);
  });

  for (const [name, [content, want]] of Object.entries(hostile)) {
    it(`refuses ${name}, naming why, and writes no page`, async () => {
      const out = join(dir, `${name.replace(/\W+/g, "-")}.html`);
      const r = await perfGate([
        "history",
        "--from",
        write(`${name.replace(/\W+/g, "-")}.json`, content),
        "--out",
        out,
      ]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(want);
      expect(() => readFileSync(out)).toThrow(/ENOENT/);
    });
  }

  it("refuses a file larger than any history before reading it", async () => {
    const huge = write("huge.json", "{");
    truncateSync(huge, 65 << 20); // sparse: 65 MiB on paper
    const r = await perfGate(["history", "--from", huge, "--out", join(dir, "huge.html")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--from .*huge\.json: 68157440 bytes, more than a history can be \(67108864\)/);
  });

  it("says what is wrong with the command line", async () => {
    expect((await perfGate(["history", "--from", "x.json"])).stderr).toMatch(/--out FILE\.html is required/);
    expect((await perfGate(["history", "--from", "x.json", "--out", "y.html", "--host", "h"])).stderr).toMatch(
      /--from reads a file; it takes no host flags \(got --host\)/,
    );
    expect(
      (await perfGate(["history", "--from", "x.json", "--out", "y.html", "--root=/r", "--perf-host", "p"])).stderr,
    ).toMatch(/--from reads a file; it takes no host flags \(got --root, --perf-host\)/);
    expect((await perfGate(["history", "--from", join(dir, "missing.json"), "--out", "y.html"])).stderr).toMatch(
      /--from .*missing\.json: cannot read a history \(ENOENT\)/,
    );
    expect(
      (await perfGate(["history", "--from", "x.json", "--out", "y.html", "--repository", "not a repo"])).stderr,
    ).toMatch(/--repository: OWNER\/NAME/);
    const mistyped = join(dir, "no-such-host");
    const r = await perfGate(["history", "--root", mistyped, "--out", join(dir, "h.html")]);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`--root: ${mistyped} is not a directory`)]);
    expect(existsSync(mistyped)).toBe(false);
  });
});
