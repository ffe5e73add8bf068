import { describe, expect, it } from "vitest";
import { APPROVAL_LABEL, atLeast, decideAccess, type Permission } from "../../src/access";

const fork = { isFork: true, action: "opened", label: null, headSha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821" };

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
    for (const p of ["none", "read", "triage"] as Permission[]) expect(decideAccess(labeled, p).allowed).toBe(false);
    for (const p of ["write", "maintain", "admin"] as Permission[]) expect(decideAccess(labeled, p).allowed).toBe(true);
    expect(decideAccess({ ...labeled, label: "bug" }, "admin").allowed).toBe(false);
  });
});
