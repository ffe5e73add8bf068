// What the host refuses in service.dependencies and service.port_env (service.Validate in
// internal/service/dependencies.go), found here with the key's line. Messages match Go's.
import type { Dependency } from "../contract/plan";
import { hostSetsEnv, portEnvError, serviceArgError } from "../contract/rules";

export interface Issue {
  path: (string | number)[];
  message: string;
}

const portVariable = (name: string) => `PORT_${name.toUpperCase()}`;

/** Every extra port's name an arm needs: service.ports, then each dependency's name and ports (contract.ServicePortNames). */
export function servicePortNames(s: { ports?: string[]; dependencies?: Dependency[] }): string[] {
  return [...(s.ports ?? []), ...(s.dependencies ?? []).flatMap((d) => [d.name, ...(d.ports ?? [])])];
}

/** Whether arg names $PORT or ${PORT}: the service's port, not a dependency's. */
function usesMainPort(arg: string): boolean {
  return [...arg.matchAll(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g)].some(
    (m) => (m[1] ?? m[2]) === "PORT",
  );
}

/** The issues of a service's dependencies and port_env; vars are what expands (serviceVariables of every port). */
export function dependencyIssues(
  s: { ports?: string[]; port_env?: string; dependencies?: Dependency[] },
  vars: readonly string[],
): Issue[] {
  const issues: Issue[] = [];
  if (s.port_env !== undefined) {
    const problem = portEnvError(s.port_env);
    if (problem) issues.push({ path: ["port_env"], message: problem });
  }
  const owner = new Map<string, string>((s.ports ?? []).map((p, i) => [p, `service.ports[${i}]`]));
  const claim = (path: (string | number)[], field: string, name: string) => {
    const prev = owner.get(name);
    if (prev)
      issues.push({
        path,
        message: `${JSON.stringify(name)} is ${prev} already: each port (and each dependency, which is its own port $${portVariable(name)}) needs a name of its own`,
      });
    else owner.set(name, field);
  };
  (s.dependencies ?? []).forEach((d, i) => {
    claim(["dependencies", i, "name"], `service.dependencies[${i}].name`, d.name);
    (d.ports ?? []).forEach((p, j) => {
      claim(["dependencies", i, "ports", j], `service.dependencies[${i}].ports[${j}]`, p);
    });
  });
  // The host stops at its first error; past a bad port_env or a name twice the rest would only repeat it.
  if (issues.length > 0) return issues;
  const depVars = vars.filter((v) => v !== "PORT");
  const checkArgv = (path: (string | number)[], argv: string[]) =>
    argv.forEach((arg, i) => {
      const problem = serviceArgError(arg, depVars);
      if (problem) issues.push({ path: [...path, i], message: problem });
      else if (usesMainPort(arg))
        issues.push({
          path: [...path, i],
          message: `${JSON.stringify(arg)}: $PORT is the service's port, not a dependency's: use its own $PORT_<NAME>`,
        });
    });
  (s.dependencies ?? []).forEach((d, i) => {
    const at = ["dependencies", i];
    if (d.command[0] === "")
      issues.push({
        path: [...at, "command", 0],
        message: `required, an argv list such as ["/usr/bin/redis-server", "--port", "$${portVariable(d.name)}"]`,
      });
    checkArgv([...at, "command"], d.command);
    for (const [k, v] of Object.entries(d.env ?? {})) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        issues.push({
          path: [...at, "env", k],
          message: "must be a variable name: letters, digits and _, not starting with a digit",
        });
      else if (k !== "PORT" && hostSetsEnv(k))
        issues.push({
          path: [...at, "env", k],
          message: "set by the host (PATH, HOME, PORT_<NAME> and STATE_DIR are the host's); name another variable",
        });
      else if (serviceArgError(v, depVars))
        issues.push({ path: [...at, "env", k], message: serviceArgError(v, depVars)! });
      else if (usesMainPort(v))
        issues.push({
          path: [...at, "env", k],
          message: `$PORT is the service's port, not a dependency's: use its own $${portVariable(d.name)}`,
        });
    }
    const own = [d.name, ...(d.ports ?? [])].map(portVariable);
    const { tcp, command } = d.ready;
    if (tcp !== undefined && command !== undefined)
      issues.push({ path: [...at, "ready"], message: "one of tcp or command, not both" });
    else if (tcp !== undefined && !own.includes(tcp))
      issues.push({
        path: [...at, "ready", "tcp"],
        message: `${JSON.stringify(tcp)} is not a port of this dependency: name one of ${own.join(", ")} (the variable, as command names it)`,
      });
    else if (command !== undefined) {
      if (command.length === 0 || command[0] === "")
        issues.push({ path: [...at, "ready", "command"], message: "the program to run, such as /usr/bin/redis-cli" });
      checkArgv([...at, "ready", "command"], command);
    } else if (tcp === undefined)
      issues.push({
        path: [...at, "ready"],
        message: `required: {tcp: ${own[0]}} (a TCP connect to it succeeds) or {command: [...]} (exits 0)`,
      });
  });
  return issues;
}
