// Who may make the gate run code on the benchmark host: pure decisions, tested without mocks.

export type Permission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

const rank: Record<Permission, number> = { none: 0, read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

export function atLeast(p: Permission, needed: Permission): boolean {
  return rank[p] >= rank[needed];
}

export const APPROVAL_LABEL = "perf:approved";

export type Access = { allowed: true; reason: string } | { allowed: false; reason: string };

/**
 * A pull request from the same repository runs. A fork's runs only when a user with write
 * permission has approved its current head SHA: by adding the approval label (the label is
 * cleared on every push, so it approves exactly the SHA it was added on).
 */
export function decideAccess(e: { isFork: boolean; action: string; label: string | null; headSha: string }, senderPermission: Permission | null): Access {
  if (!e.isFork) return { allowed: true, reason: "the pull request's branch is in this repository" };
  const sha = e.headSha.slice(0, 7);
  if (e.action === "labeled" && e.label === APPROVAL_LABEL) {
    if (senderPermission && atLeast(senderPermission, "write")) {
      return { allowed: true, reason: `a user with ${senderPermission} permission approved ${sha} with ${APPROVAL_LABEL}` };
    }
    return { allowed: false, reason: `${APPROVAL_LABEL} was added by a user with ${senderPermission ?? "no"} permission; write or higher is needed to approve a fork's code for the benchmark host` };
  }
  return {
    allowed: false,
    reason: `this pull request comes from a fork, so its code does not run on the benchmark host until a user with write permission approves head ${sha}: add the ${APPROVAL_LABEL} label (it is cleared on every new push)`,
  };
}
