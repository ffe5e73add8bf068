// The rules both halves compute, written once per language and checked against the same
// vectors (benchmark-host/contract/testdata): the workload@rate key, the floor key, the sample
// budget and the service arguments the host expands.

/**
 * Names a comparison, a floor and a run's place in the evidence: "workload@rate", the rate as
 * its shortest decimal, never an exponent (1000000, not 1e+06). contract.Key in Go.
 */
export function comparisonKey(workload: string, rate: number): string {
  return `${workload}@${plainDecimal(rate)}`;
}

/**
 * Names a floor: its comparison's key and the percentile it was measured at, "workload@rate/pNN"
 * (checkout@1000/p99). contract.FloorKey in Go.
 */
export function floorKey(workload: string, rate: number, percentile: number): string {
  return `${comparisonKey(workload, rate)}/p${plainDecimal(percentile)}`;
}

/**
 * The percentile a floor recorded before floors named one is taken to be at (perf-host marks
 * it percentile_assumed): the default SLO percentile. contract.LegacyFloorPercentile in Go.
 */
export const LEGACY_FLOOR_PERCENTILE = 99;

/** The shortest decimal that reads back as x, without an exponent (1e-7 → 0.0000001). */
function plainDecimal(x: number): string {
  const text = String(x);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign, lead, frac = "", exp] = m;
  const digits = lead! + frac;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  return `${sign}${digits.padEnd(point, "0")}`;
}

/**
 * Fewest recorded requests a slice's percentile is read from: three beyond it (p99 → 300), as
 * contract.SampleBudget says why. Rounded to a millionth before the ceiling, as Go's is, since in
 * floating point 3/(1−0.999) is 3000.0000000003.
 */
export function sampleBudget(percentile: number): number {
  return Math.ceil(Math.round((3 / (1 - percentile / 100)) * 1e6) / 1e6);
}

/** The variables a service's command, setup and env values may name: PORT, STATE_DIR and the PORT_<NAME> of service.ports and dependencies (contract.ServiceVariables). */
export function serviceVariables(ports: readonly string[] = []): string[] {
  return [...new Set(["PORT", "STATE_DIR", ...ports.map((p) => `PORT_${p.toUpperCase()}`)])];
}

/**
 * What is wrong with one argument of a service's command or setup, or undefined. The host
 * expands $NAME and ${NAME} for the service's variables and leaves any other $… as written;
 * only a $PORT_<NAME> that service.ports does not name is wrong (contract.ExpandArg).
 */
export function serviceArgError(arg: string, vars: readonly string[]): string | undefined {
  for (const m of arg.matchAll(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g)) {
    const name = m[1] ?? m[2]!;
    if (!vars.includes(name) && name.startsWith("PORT_")) {
      const known = vars
        .map((v) => `$${v}`)
        .sort()
        .join(", ");
      return `${JSON.stringify(arg)}: $${name} is not a port of service.ports or service.dependencies (${known} expand here)`;
    }
  }
  return undefined;
}

/** Whether the host sets the variable itself, so that service.env may not: portEnv is service.port_env (contract.HostSetsEnv). */
export function hostSetsEnv(name: string, portEnv = "PORT"): boolean {
  return ["PATH", "HOME", portEnv || "PORT", "STATE_DIR"].includes(name) || name.startsWith("PORT_");
}

/** What is wrong with a service.port_env, or undefined (contract.PortEnvError). */
export function portEnvError(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    return `must be a variable name: letters, digits and _, not starting with a digit, got ${JSON.stringify(name)}`;
  if (name !== "PORT" && hostSetsEnv(name))
    return `${JSON.stringify(name)} is set by the host already (PATH, HOME, PORT_<NAME> and STATE_DIR are the host's); name the variable your service reads its port from, such as GRPC_PORT`;
  return undefined;
}

const PLACEHOLDERS = ["seq", "rand", "run", "arm", "slice"];

/**
 * What the host's template parser (plan.ParseTemplate) says is wrong with a request template (a
 * path, a header value, a body, a gRPC message or metadata value), with its message; undefined
 * when it is good. The config says it with the key's line, before a build is deployed.
 */
export function templateError(template: string): string | undefined {
  const wrong = (why: string) => `template ${JSON.stringify(template)}: ${why}`;
  let rest = template;
  for (let open = rest.indexOf("{{"); open >= 0; open = rest.indexOf("{{")) {
    const end = rest.indexOf("}}", open);
    if (end < 0) return wrong("unclosed {{");
    const fields = rest
      .slice(open + 2, end)
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    const [name, ...args] = fields;
    if (name === undefined) return wrong("empty placeholder {{}}");
    if (!PLACEHOLDERS.includes(name))
      return wrong(`unknown placeholder {{${name}}} (known: seq, rand, rand N, run, arm, slice)`);
    if (name === "rand" && args.length === 1) {
      const n = /^[0-9]+$/.test(args[0]!) ? BigInt(args[0]!) : 0n; // N as Go's ParseUint reads it
      if (n === 0n || n >= 2n ** 64n)
        return wrong(`{{rand N}} needs a positive integer N, got ${JSON.stringify(args[0])}`);
    } else if (args.length > 0) return wrong(`{{${name}}} takes no argument`);
    rest = rest.slice(end + 2);
  }
  return rest.includes("}}") ? wrong("}} without {{") : undefined;
}
