// What the host's plan check (plan.compileRequest) refuses in a request, found in the config
// with the key's line: before a build is deployed and a champion promoted, not after.
import { TOKEN } from "../contract/plan";
import { templateError } from "../contract/rules";

interface Request {
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  grpc?: { message?: Record<string, unknown>; metadata?: Record<string, string> };
}

/** A header's (or gRPC metadata's) value: the load generator frames the request around it. */
function valueError(name: string, value: string): string | undefined {
  if (["content-length", "transfer-encoding"].includes(name.toLowerCase()))
    return "is computed by the load generator; leave it out";
  if (/[\r\n\0]/.test(value)) return "must not contain CR, LF or NUL";
  return templateError(value);
}

/** Each problem of one request, with its path under the request. */
export function requestIssues(r: Request): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const add = (path: (string | number)[], message: string | undefined) => {
    if (message !== undefined) issues.push({ path, message });
  };
  if (r.path !== undefined) add(["path"], templateError(r.path));
  if (r.body !== undefined) add(["body"], templateError(r.body));
  for (const [name, value] of Object.entries(r.headers ?? {}))
    add(
      ["headers", name],
      TOKEN.test(name) ? valueError(name, value) : "a header name: an HTTP token such as X-Request-Id",
    );
  if (r.grpc?.message !== undefined) add(["grpc", "message"], templateError(JSON.stringify(r.grpc.message)));
  for (const [name, value] of Object.entries(r.grpc?.metadata ?? {}))
    add(
      ["grpc", "metadata", name],
      name !== name.toLowerCase() ||
        !TOKEN.test(name) ||
        name.startsWith("grpc-") ||
        ["te", "content-type"].includes(name)
        ? "must be a lowercase header name of the caller's own (not grpc-*, te or content-type)"
        : valueError(name, value),
    );
  return issues;
}
