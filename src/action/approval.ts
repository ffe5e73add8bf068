// Who may make the gate run code on the benchmark host: pure decisions, tested without mocks.

export type Permission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

const rank: Record<Permission, number> = { none: 0, read: 1, triage: 2, write: 3, maintain: 4, admin: 5 };

export function atLeast(p: Permission, needed: Permission): boolean {
  return rank[p] >= rank[needed];
}

export const APPROVAL_LABEL = "perf:approved";

/** A refusal says why in its reason, and in a title fit for a check run. */
export type Access = { allowed: true; reason: string } | Refusal;
export type Refusal = { allowed: false; reason: string; title: string };

export const WAITING_TITLE = "perf-gate: waiting for approval";
const MOVED_TITLE = /^perf-gate: approved [0-9a-f]{7}, head is now [0-9a-f]{7}: approve again$/;

/**
 * Whether a commit's finished perf-gate check stands as what the gate said of that commit (a
 * verdict, an override, a failure report), which an event that approves nothing new must not
 * cover with a newer check: a required check reads the newest one, and a reopened fork would
 * otherwise wait for approval over its own blocking red. A refusal or a cancelled check is no
 * such thing.
 */
export function standsOnCommit(check: { conclusion: string | null; title: string } | null): boolean {
  if (!check || !["success", "failure", "neutral"].includes(check.conclusion ?? "")) return false;
  return check.title !== WAITING_TITLE && !MOVED_TITLE.test(check.title);
}

export interface AccessEvent {
  isFork: boolean;
  action: string;
  label: string | null;
  /** The head the event carries: for a labeled event, the head when the label was added. */
  headSha: string;
}

/** What decides an approval label, asked of GitHub when the job runs. */
export interface Approver {
  /** The permission of the user who added the label. */
  permission: Permission;
  /** The pull request's head now. */
  headNow: string;
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
 * permission has approved its head by adding the approval label, and only that head: the one
 * the labeled event carries, which the approver saw when adding it (the label is cleared on
 * every push). If the pull request's head has moved since (a push between the label and this
 * job), the approval is of a commit that is no longer the head and the head is code nobody
 * approved: refused, as `/perf rerun` refuses a head that moved after the comment.
 */
export function decideAccess(e: AccessEvent, approver: Approver | null): Access {
  if (!e.isFork) return { allowed: true, reason: "the pull request's branch is in this repository" };
  const sha = e.headSha.slice(0, 7);
  if (approves(e) && approver) {
    const { permission, headNow } = approver;
    if (!atLeast(permission, "write")) {
      return refused(
        `${APPROVAL_LABEL} was added by a user with ${permission} permission; write or higher is needed to approve a fork's code for the benchmark host`,
      );
    }
    if (headNow !== e.headSha) {
      const now = headNow.slice(0, 7);
      return {
        allowed: false,
        title: `perf-gate: approved ${sha}, head is now ${now}: approve again`,
        reason: `${APPROVAL_LABEL} approved ${sha}, but the pull request's head is now ${now}: a push landed after the approval, so ${now} is code nobody approved and ${sha} is no longer the head. The label is removed; a user with write permission who has reviewed ${now} adds it again`,
      };
    }
    return {
      allowed: true,
      reason: `a user with ${permission} permission approved ${sha} with ${APPROVAL_LABEL}, and it is still the head`,
    };
  }
  return refused(
    `this pull request comes from a fork, so its code does not run on the benchmark host until a user with write permission approves head ${sha}: add the ${APPROVAL_LABEL} label (it is cleared on every new push)`,
  );
}

function refused(reason: string): Refusal {
  return { allowed: false, title: WAITING_TITLE, reason };
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
