// What the host relays from a pull request's build (its setup's output, its log's tail) reaches
// the job's log and a terminal: it must not be read there as a workflow command or an escape sequence.
import { describe, expect, it } from "vitest";
import { inertLine, inertText } from "../../src/host/client";

describe("the host's text in a log", () => {
  it("leaves an ordinary line as it is", () => {
    const line = "[#####---------------] 4/16 slice 4/16 champion   p50=0.176ms p99=0.359ms\tvalid";
    expect(inertLine(line)).toBe(line);
  });

  it("escapes a carriage return, after which the runner would read a workflow command", () => {
    const shown = inertLine("  | npm ci\r::add-mask::ghp_x\r::error::the champion is broken");
    expect(shown).toBe("  | npm ci\\x0d::add-mask::ghp_x\\x0d::error::the champion is broken");
    expect(shown.split(/\r\n|\r|\n/)).toHaveLength(1);
  });

  it("quotes a line that is itself a workflow command, also indented", () => {
    expect(inertLine("::set-output name=verdict::green")).toBe("| ::set-output name=verdict::green");
    expect(inertLine("   ::stop-commands::x")).toBe("|    ::stop-commands::x");
  });

  it("breaks the older ##[ form wherever it stands in a line, as the runner reads it", () => {
    expect(inertLine("##[error]forged")).toBe("##\\[error]forged");
    expect(inertLine("npm ok ##[set-output name=report-path]/etc/passwd")).toBe(
      "npm ok ##\\[set-output name=report-path]/etc/passwd",
    );
  });

  it("escapes a terminal's escape sequences, C1 controls included", () => {
    expect(inertLine("\x1b[2K\x1b[1Agreen\x9b31m")).toBe("\\x1b[2K\\x1b[1Agreen\\x9b31m");
  });

  it("keeps the line breaks of a multi-line message, each line made inert", () => {
    expect(inertText("deploy challenger: refused\n::error::x\nlast")).toBe(
      "deploy challenger: refused\n| ::error::x\nlast",
    );
  });
});
