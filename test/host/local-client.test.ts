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

  it("names a failed verb once, also when perf-host names it in its message", async () => {
    const dir = scratchDir("local-client");
    const perfHost = join(dir, "perf-host");
    // A refusal as perf-host words a deploy's (exit 2 refused), and a bare one.
    writeFileSync(
      perfHost,
      `#!/bin/sh\nif [ "$2" = challenger ]; then echo "perf-host: deploy challenger $3: not a build" >&2; else echo "not a build" >&2; fi\nexit 2\n`,
    );
    chmodSync(perfHost, 0o755);
    const client = new HostClient({ perfHost, flags: [] });
    const build = join(dir, "build.tar.gz");
    writeFileSync(build, "x");
    await expect(client.deploy("challenger", "abc1234", build)).rejects.toThrow(
      new HostError("refused", "deploy challenger abc1234: not a build"),
    );
    await expect(client.deploy("champion", "abc1234", build)).rejects.toThrow(
      new HostError("refused", "deploy champion abc1234: not a build"),
    );
  });
});
