// The hosts of a pool, each its own instrument behind its own perf-host: one client per host,
// asked side by side. A thin adapter: which host a gate takes is decided in
// src/experiment/landing.ts (docs/design/0026-a-pool-of-hosts.md).
import {
  type BenchmarkHost,
  type Connect,
  connectHostClient,
  HostError,
  type HostOptions,
  type SshTarget,
} from "./client";
import type { HostAddress } from "./targets";

export interface PoolMember {
  /** How reports name the host (host, or host:port). */
  name: string;
  client: BenchmarkHost;
}

/** One host's answer, or why it gave none (unreachable, a wrong key, a refusal). */
export type Reading<T> = { name: string; ok: true; value: T } | { name: string; ok: false; error: HostError };

/** What one host's share of a job for every host came to. */
export type Outcome<T> = { name: string; ok: true; value: T } | { name: string; ok: false; error: Error };

export type PoolOptions = Pick<HostOptions, "attempts" | "backoffMs" | "busyPollMs"> & {
  log?: (line: string) => void;
  /** How each host is reached: over SSH (HostClient) unless given (the modes' tests). */
  connect?: Connect;
};

export class HostPool {
  private constructor(readonly members: readonly PoolMember[]) {}

  /** Every host over SSH with the same login, key and known-hosts lines. */
  static overSsh(
    hosts: readonly HostAddress[],
    login: Omit<SshTarget, "host" | "port">,
    o: PoolOptions = {},
  ): HostPool {
    const { connect = connectHostClient, ...options } = o;
    const log = o.log ?? (() => {});
    return new HostPool(
      hosts.map((h) => ({
        name: h.name,
        client: connect({
          ...login,
          ...(h.user ? { user: h.user } : {}),
          host: h.host,
          port: h.port,
          ...options,
          log: hosts.length > 1 ? (l) => log(`${h.name}: ${l}`) : log,
        }),
      })),
    );
  }

  /** A pool of one, for a host reached another way (perf-host run locally). */
  static single(name: string, client: BenchmarkHost): HostPool {
    return new HostPool([{ name, client }]);
  }

  get size(): number {
    return this.members.length;
  }

  member(name: string): PoolMember {
    const m = this.members.find((x) => x.name === name);
    if (!m) throw new Error(`no host ${name} in the pool`);
    return m;
  }

  /** Asks every host at once. A host's HostError is its reading; any other error is a bug and thrown. */
  async ask<T>(question: (client: BenchmarkHost, name: string) => Promise<T>): Promise<Reading<T>[]> {
    return Promise.all(
      this.members.map(async ({ name, client }): Promise<Reading<T>> => {
        try {
          return { name, ok: true, value: await question(client, name) };
        } catch (e) {
          if (e instanceof HostError) return { name, ok: false, error: e };
          throw e;
        }
      }),
    );
  }

  /**
   * Does the same on every host at once, each its own instrument: one host's failure is its
   * outcome, and leaves the others to finish.
   */
  async each<T>(work: (member: PoolMember) => Promise<T>): Promise<Outcome<T>[]> {
    return Promise.all(
      this.members.map(async (m): Promise<Outcome<T>> => {
        try {
          return { name: m.name, ok: true, value: await work(m) };
        } catch (e) {
          return { name: m.name, ok: false, error: e as Error };
        }
      }),
    );
  }

  /** Removes every host's key from disk. */
  close(): void {
    for (const m of this.members) m.client.close();
  }
}
