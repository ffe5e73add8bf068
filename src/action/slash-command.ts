// The /perf PR-comment commands: parsing and who may run them. Pure, tested without mocks.
import { atLeast, type Permission } from "./approval";

export type SlashCommand =
  | { kind: "none" }
  | { kind: "rerun" }
  | { kind: "override"; reason: string }
  | { kind: "invalid"; message: string };

export const COMMAND_HELP =
  "`/perf rerun` (write permission) or `/perf override <reason>` (maintain or admin permission)";
const MAX_REASON = 500;

/** Only the first line counts, so a command quoted or explained further down does nothing. */
export function parseSlashCommand(body: string): SlashCommand {
  const first = (body.split(/\r?\n/, 1)[0] ?? "").trim();
  const m = /^\/perf(?:\s+(\S+)(?:\s+(.*))?)?$/.exec(first);
  if (!m) return { kind: "none" };
  const [, verb, rest = ""] = m;
  const args = rest.trim();
  switch (verb) {
    case "rerun":
      return args
        ? { kind: "invalid", message: `\`/perf rerun\` takes no arguments (got \`${clip(args)}\`)` }
        : { kind: "rerun" };
    case "override":
      if (!args)
        return {
          kind: "invalid",
          message:
            "`/perf override` needs a reason, e.g. `/perf override the slowdown buys the new index; tracked in #123`",
        };
      if (args.length > MAX_REASON)
        return { kind: "invalid", message: `the override reason is ${args.length} characters; at most ${MAX_REASON}` };
      return { kind: "override", reason: args };
    case undefined:
      return { kind: "invalid", message: `\`/perf\` needs a command: ${COMMAND_HELP}` };
    default:
      return { kind: "invalid", message: `unknown command \`/perf ${clip(verb)}\`; the commands are ${COMMAND_HELP}` };
  }
}

export type CommandAccess = { allowed: true } | { allowed: false; reason: string };

/** The permission each command needs, checked against the collaborator permission API. */
export const NEEDED: Record<"rerun" | "override", Permission> = { rerun: "write", override: "maintain" };

export function authorizeCommand(
  kind: "rerun" | "override",
  author: { login: string; isBot: boolean },
  permission: Permission | null,
): CommandAccess {
  if (author.isBot)
    return { allowed: false, reason: `@${author.login} is a bot; /perf commands are taken only from people` };
  const needed = NEEDED[kind];
  if (permission && atLeast(permission, needed)) return { allowed: true };
  return {
    allowed: false,
    reason: `@${author.login} has ${permission ?? "no"} permission on this repository; \`/perf ${kind}\` needs ${needed} or higher`,
  };
}

/**
 * Echoes a word of user text into a reply without letting it break the Markdown, ping anyone,
 * or open an HTML comment (a reply that carried `<!--` could pass for a hidden marker).
 */
function clip(s: string): string {
  return s.slice(0, 40).replace(/[`@<>\r\n]/g, "");
}

/** User text (an override's reason) as Markdown that shows it as written: no HTML, no hidden comment. */
export function quoted(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
