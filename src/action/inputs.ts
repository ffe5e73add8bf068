// The action's inputs, read and validated once: errors name the input and the expected form.
import * as core from "@actions/core";
import { z } from "zod";
import { checkKnownHosts, type HostAddress, parseHostList } from "../host/targets";

export const MODES = ["access", "gate", "command", "rerun", "promote", "rollback", "calibrate"] as const;
export type Mode = (typeof MODES)[number];

/** Every mode but access and command talks to the benchmark host. */
export const needsHost = (mode: Mode) => mode !== "access" && mode !== "command";

const schema = z.object({
  // One host, or a pool: several separated by commas (parsed below, into hosts).
  host: z.string(),
  port: z.coerce.number().int().min(1).max(65535),
  user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, "a user name such as perf-gate-ci"),
  "ssh-key": z
    .string()
    .refine(
      (s) => s === "" || s.includes("PRIVATE KEY"),
      "an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----…)",
    ),
  "known-hosts": z
    .string()
    .refine(
      (s) => s === "" || s.split("\n").some((l) => /^\S+ (ssh-ed25519|ecdsa-sha2-\S+|ssh-rsa) \S+/.test(l.trim())),
      "the pinned host key line, 'HOST ssh-ed25519 AAAA…' (from install.sh)",
    ),
  "github-token": z.string().min(1, "a token (the default github.token will do)"),
  config: z.string().regex(/^[^/][^\0]*$/, "a path relative to the repository root"),
  artifact: z.string(),
  "base-artifact": z.string(),
  "base-sha": z.string().regex(/^([0-9a-f]{40})?$/, "a full 40-character lowercase commit SHA"),
  mode: z.enum(MODES),
  sha: z.string().regex(/^([0-9a-f]{40})?$/, "a full 40-character lowercase commit SHA"),
  "on-infrastructure-failure": z.enum(["fail", "neutral"]),
  "busy-timeout-minutes": z.coerce.number().positive().max(360),
  "output-dir": z.string(),
});

export type Inputs = z.infer<typeof schema> & {
  /** The benchmark hosts of the host input, each with its port (empty in modes that never touch a host). */
  hosts: HostAddress[];
};

export class InputError extends Error {
  override name = "InputError";
}

/** Reads the inputs through @actions/core (INPUT_* variables) and masks the secrets. */
export function getInputs(): Inputs {
  const raw = Object.fromEntries(Object.keys(schema.shape).map((k) => [k, core.getInput(k)]));
  // A multi-line secret is masked line by line, so no line of the key can show in a log.
  for (const secret of [raw["ssh-key"], raw["github-token"]]) {
    for (const line of (secret ?? "").split("\n").map((l) => l.trim())) if (line) core.setSecret(line);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    const name = String(i.path[0]);
    const given = raw[name] ? "" : " (it is empty)";
    throw new InputError(`input ${name}: expected ${i.message}${given}`);
  }
  const inputs = parsed.data;
  if (!needsHost(inputs.mode)) return { ...inputs, hosts: [] };
  for (const name of ["host", "ssh-key", "known-hosts"] as const) {
    if (!inputs[name])
      throw new InputError(`input ${name}: mode ${inputs.mode} talks to the benchmark host and needs it (it is empty)`);
  }
  return { ...inputs, hosts: poolOf(inputs) };
}

/** The host input's hosts, each pinned by a line of known-hosts. */
export function poolOf(inputs: Pick<Inputs, "host" | "port" | "known-hosts">): HostAddress[] {
  try {
    const hosts = parseHostList(inputs.host, inputs.port, "input host");
    checkKnownHosts(inputs["known-hosts"], hosts, "input known-hosts");
    return hosts;
  } catch (e) {
    throw new InputError((e as Error).message);
  }
}
