// Who may make the gate run code on the benchmark host: pure decisions, tested without mocks.

export type Permission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

const rank: Record<Permission, number> = { none: 0, read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

export function atLeast(p: Permission, needed: Permission): boolean {
  return rank[p] >= rank[needed];
}

export const APPROVAL_LABEL = "perf:approved";

export type Access = { allowed: true; reason: string } | { allowed: false; reason: string };

export interface AccessEvent {
  isFork: boolean;
  action: string;
  label: string | null;
  headSha: string;
}

/** A fork's labeled event that adds the approval label: the only event whose sender's permission decides. */
export function approves(e: AccessEvent): boolean {
  return e.isFork && e.action === "labeled" && e.label !== null && sameLabel(e.label, APPROVAL_LABEL);
}

/** A labeled event for another label (or the approval label on a branch of this repository) decides nothing. */
export function decidesNothing(e: AccessEvent): boolean {
  return e.action === "labeled" && !approves(e);
}

/**
 * A pull request from the same repository runs. A fork's runs only when a user with write
 * permission has approved its current head SHA: by adding the approval label (the label is
 * cleared on every push, so it approves exactly the SHA it was added on).
 */
export function decideAccess(e: AccessEvent, senderPermission: Permission | null): Access {
  if (!e.isFork) return { allowed: true, reason: "the pull request's branch is in this repository" };
  const sha = e.headSha.slice(0, 7);
  if (approves(e)) {
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

const ROLES: readonly Permission[] = ["admin", "maintain", "write", "triage", "read", "none"];

/**
 * A collaborator's role from the collaborator-permission API. Its `permission` holds only the
 * legacy base role (maintain reads as write, triage as read); `role_name` holds the role. A
 * custom role's name is none of the built-in ones: then its base role in `permission` counts.
 */
export function effectivePermission(permission: string, roleName: string | undefined): Permission {
  const known = (r: string | undefined): r is Permission => ROLES.includes(r as Permission);
  if (known(roleName)) return roleName;
  return known(permission) ? permission : "none";
}

/** GitHub's label names are case-insensitive: Perf:Approved is perf:approved. */
export function sameLabel(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
