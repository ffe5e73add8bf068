// Reading a message of the contract: a document that is not what the contract says is refused
// with the path of the first problems, before any number is used.
import type { z } from "zod";

/** A document that is not the message it should be; the message names the source and field. */
export class MessageError extends Error {
  override name = "MessageError";
}

export function parseMessage<T extends z.ZodType>(schema: T, source: string, doc: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(doc);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map((i) => `${formatPath(i.path)}: ${i.message}`);
    throw new MessageError(`${source}: not ${what}: ${problems.join("; ")}`);
  }
  return parsed.data;
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(document)";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}
