// The client takes a profile from a host as bytes it checks, never as a file the host names:
// a hostile or broken host's answer that is not gzip is refused, and a missing profile is the
// host's error, said as such.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { HostClient, HostError } from "../../src/host/client";
import { scratchDir } from "../support/scratch";

/** A perf-host that answers `profile RUN-ID ARM` with the given shell. */
function hostAnswering(script: string): HostClient {
  const dir = scratchDir("profile-client");
  const perfHost = join(dir, "perf-host");
  writeFileSync(perfHost, `#!/bin/sh\n[ "$1" = profile ] || exit 2\n${script}\n`);
  chmodSync(perfHost, 0o755);
  return new HostClient({ perfHost, flags: [] });
}

describe("HostClient.profile", () => {
  it("returns the gzipped profile as the host sent it", async () => {
    const gz = join(scratchDir("profile-bytes"), "p.gz");
    writeFileSync(gz, gzipSync(Buffer.from("pprof bytes")));
    const bytes = await hostAnswering(`cat ${gz}`).profile("run-1", "challenger");
    expect(Buffer.from(bytes).equals(gzipSync(Buffer.from("pprof bytes")))).toBe(true);
  });

  it("refuses an answer that is not a gzipped profile", async () => {
    await expect(hostAnswering(`printf '../../etc/passwd\\n'`).profile("run-1", "champion")).rejects.toThrow(
      new HostError("protocol", "profile run-1 champion: the host did not answer with a gzipped profile"),
    );
  });

  it("says the host's reason when there is no profile", async () => {
    const err = await hostAnswering(`echo "perf-host: run run-1 has no challenger profile" >&2; exit 1`)
      .profile("run-1", "challenger")
      .catch((e) => e);
    expect(err).toBeInstanceOf(HostError);
    expect(err.kind).toBe("run_failed");
    expect(err.message).toBe("profile run-1 challenger: run run-1 has no challenger profile");
  });
});
