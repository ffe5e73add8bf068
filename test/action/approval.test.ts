import { describe, expect, it } from "vitest";
import {
  APPROVAL_LABEL,
  approves,
  atLeast,
  decideAccess,
  decidesNothing,
  effectivePermission,
  type Permission,
  sameLabel,
} from "../../src/action/approval";

const fork = { isFork: true, action: "opened", label: null, headSha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821" };
/** The labeled event's sender, with the pull request's head unmoved since the label. */
const by = (permission: Permission, headNow = fork.headSha) => ({ permission, headNow });

describe("who may run code on the host", () => {
  it("orders permissions", () => {
    const ladder: Permission[] = ["none", "read", "triage", "write", "maintain", "admin"];
    ladder.forEach((p, i) => {
      expect(atLeast(p, "write")).toBe(i >= 3);
      expect(atLeast(p, "maintain")).toBe(i >= 4);
    });
  });

  it("lets a same-repository pull request run", () => {
    expect(decideAccess({ ...fork, isFork: false }, null).allowed).toBe(true);
  });

  it("holds a fork until a writer approves its head", () => {
    for (const action of ["opened", "synchronize", "reopened"]) {
      const a = decideAccess({ ...fork, action }, null);
      expect(a.allowed).toBe(false);
      expect(a.reason).toContain("approves head ec26c3e");
    }
    const labeled = { ...fork, action: "labeled", label: APPROVAL_LABEL };
    for (const p of ["none", "read", "triage"] as Permission[])
      expect(decideAccess(labeled, by(p))).toMatchObject({ allowed: false, title: "perf-gate: waiting for approval" });
    for (const p of ["write", "maintain", "admin"] as Permission[])
      expect(decideAccess(labeled, by(p)).allowed).toBe(true);
    expect(decideAccess({ ...labeled, label: "bug" }, by("admin")).allowed).toBe(false);
  });

  it("approves only the head the label was added on: a push after it voids the approval", () => {
    const labeled = {
      ...fork,
      action: "labeled",
      label: APPROVAL_LABEL,
      headSha: "1234567890abcdef1234567890abcdef12345678",
    };
    const moved = decideAccess(labeled, by("admin", "2234567890abcdef1234567890abcdef12345678"));
    expect(moved).toEqual({
      allowed: false,
      title: "perf-gate: approved 1234567, head is now 2234567: approve again",
      reason: expect.stringMatching(
        /^perf:approved approved 1234567, but the pull request's head is now 2234567: a push landed after the approval, so 2234567 is code nobody approved/,
      ),
    });
    // Permission is decided first: a triager's label on a moved head is refused for the permission.
    expect(decideAccess(labeled, by("triage", "2234567890abcdef1234567890abcdef12345678"))).toMatchObject({
      allowed: false,
      reason: expect.stringMatching(/triage permission/),
    });
    expect(decideAccess(labeled, by("write", labeled.headSha))).toMatchObject({
      allowed: true,
      reason: expect.stringContaining("approved 1234567 with perf:approved, and it is still the head"),
    });
  });
});

describe("what GitHub says of a user and a label", () => {
  it("takes the role from role_name, and the legacy permission only for a custom role", () => {
    // GitHub's collaborator-permission API: permission is the legacy base role, role_name the role.
    expect(effectivePermission("write", "maintain")).toBe("maintain");
    expect(effectivePermission("read", "triage")).toBe("triage");
    expect(effectivePermission("admin", "admin")).toBe("admin");
    expect(effectivePermission("write", "release-manager")).toBe("write");
    expect(effectivePermission("read", "auditor")).toBe("read");
    expect(effectivePermission("bogus", "bogus")).toBe("none");
  });

  it("compares label names case-insensitively: only a fork's approval label decides anything", () => {
    expect(sameLabel("Perf:Approved", APPROVAL_LABEL)).toBe(true);
    const labeled = { ...fork, action: "labeled", label: "PERF:APPROVED" };
    expect(approves(labeled)).toBe(true);
    expect(decideAccess(labeled, by("write")).allowed).toBe(true);
    expect(decidesNothing(labeled)).toBe(false);
    expect(decidesNothing({ ...labeled, label: "bug" })).toBe(true);
    expect(decidesNothing({ ...labeled, isFork: false })).toBe(true); // a branch of this repository needs no approval
    expect(decidesNothing({ ...fork, action: "synchronize" })).toBe(false);
  });
});
