// HostClient on this machine: a perf-host that cannot be started is said as such, with the
// program and why, not as a verb that failed with exit -1.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HostClient, HostError } from "../../src/host/client";
import { scratchDir } from "../support/scratch";

describe("HostClient on this machine", () => {
  it("says a perf-host it cannot start, and why", async () => {
    const missing = new HostClient({ perfHost: "/nonexistent/perf-host", flags: [] });
    await expect(missing.status()).rejects.toThrow(
      new HostError("unreachable", "/nonexistent/perf-host: cannot start it (ENOENT)"),
    );
    const notExecutable = join(scratchDir("local-client"), "perf-host");
    writeFileSync(notExecutable, "#!/bin/sh\n");
    chmodSync(notExecutable, 0o644);
    await expect(new HostClient({ perfHost: notExecutable, flags: [] }).status()).rejects.toThrow(
      new HostError("unreachable", `${notExecutable}: cannot start it (EACCES)`),
    );
  });
});
