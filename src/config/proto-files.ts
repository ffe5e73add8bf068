// What the host refuses in a workload's proto_files and proto_import_paths (checkProtoFiles in
// benchmark-host/internal/plan/protofiles.go), found here with the key's line.
import type { Issue } from "./dependencies";

/** Whether p is relative and stays inside the build, as Go's filepath.IsLocal says. */
function insideBuild(p: string): boolean {
  if (p === "" || p.startsWith("/") || p.includes("\0")) return false;
  let depth = 0;
  for (const part of p.split("/")) {
    if (part === "..") depth--;
    else if (part !== "." && part !== "") depth++;
    if (depth < 0) return false;
  }
  return true;
}

const insideMessage = (p: string) =>
  `must be a relative path inside the build (each arm's release), got ${JSON.stringify(p)}`;

/** The issues of a workload's proto files. */
export function protoFileIssues(w: {
  protocol: string;
  proto_descriptor_set?: string;
  proto_files?: string[];
  proto_import_paths?: string[];
}): Issue[] {
  const files = w.proto_files ?? [];
  if (w.proto_import_paths && files.length === 0)
    return [{ path: ["proto_import_paths"], message: "only with proto_files, which it finds them in" }];
  if (files.length === 0) return [];
  if (w.protocol !== "grpc")
    return [
      {
        path: ["proto_files"],
        message: `only a grpc workload describes its methods (protocol is ${JSON.stringify(w.protocol)})`,
      },
    ];
  if (w.proto_descriptor_set !== undefined)
    return [{ path: ["proto_files"], message: "give proto_files or proto_descriptor_set, not both" }];
  const issues: Issue[] = [];
  files.forEach((f, i) => {
    if (!insideBuild(f)) issues.push({ path: ["proto_files", i], message: insideMessage(f) });
    else if (!f.endsWith(".proto"))
      issues.push({ path: ["proto_files", i], message: `must name a .proto file, got ${JSON.stringify(f)}` });
  });
  (w.proto_import_paths ?? []).forEach((d, i) => {
    if (!insideBuild(d)) issues.push({ path: ["proto_import_paths", i], message: insideMessage(d) });
  });
  return issues;
}
