// The tests' own ports (freePorts) lie outside the kernel's ephemeral range, so no outgoing
// connection, the tests' own ssh and HTTP clients included, takes one before its service binds it.
import { readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePorts, portsWithSockets } from "./bench-host";

const [ephemeralLo, ephemeralHi] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
  .trim()
  .split(/\s+/)
  .map(Number) as [number, number];

// Where the ephemeral range leaves less than 2000 ports on either side, the rule chooses inside it.
const noRoom = ephemeralLo - 10000 < 2000 && 65535 - ephemeralHi < 2000;

describe("freePorts", () => {
  it.skipIf(noRoom)(
    "chooses different free ports outside the ephemeral range, where an outgoing connection's port never is",
    async () => {
      const ports = await freePorts(50);
      expect(new Set(ports).size).toBe(50);
      for (const p of ports) expect(p < ephemeralLo || p > ephemeralHi, `port ${p}`).toBe(true);

      const server = createServer((s) => s.end());
      await new Promise<void>((resolve) => server.listen(ports[0], "127.0.0.1", resolve));
      const client = connect(ports[0]!, "127.0.0.1");
      await new Promise((resolve) => client.once("connect", resolve));
      const local = client.localPort!;
      client.destroy();
      await new Promise((resolve) => server.close(resolve));
      expect(local).toBeGreaterThanOrEqual(ephemeralLo);
      expect(local).toBeLessThanOrEqual(ephemeralHi);
      expect(ports).not.toContain(local);
    },
  );

  it("passes over a port whose connection is in TIME_WAIT, which a service binding without SO_REUSEADDR is refused", async () => {
    // The side that closes first keeps the connection in TIME_WAIT: here the server, on its port.
    const server = createServer((s) => s.end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const client = connect(port, "127.0.0.1");
    await new Promise((resolve) => client.once("close", resolve));
    await new Promise((resolve) => server.close(resolve));
    expect(portsWithSockets()).toContain(port);
  });
});
