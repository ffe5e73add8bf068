// The events the modes start from, parsed from real webhook payloads.
import { describe, expect, it } from "vitest";
import { parseCommentEvent, parsePushToDefaultBranch } from "../../src/action/event";
import { examplePayload } from "../support/action-harness";

type Comment = { action: string; issue: { pull_request?: object }; comment: { user: { login: string; type: string } } };
type Push = { ref: string; deleted: boolean; after: string };

describe("issue_comment", () => {
  it("tells a pull request's comment from an issue's, and a bot from a person", () => {
    const onIssue = examplePayload<Comment>("issue_comment", (e) => e.action === "created");
    expect(parseCommentEvent("issue_comment", onIssue)).toMatchObject({
      owner: "Codertocat",
      repo: "Hello-World",
      action: "created",
      number: 1,
      onPullRequest: false,
      body: "You are totally right! I'll get this fixed right away.",
      author: { login: "Codertocat", isBot: false },
    });
    onIssue.issue.pull_request = { url: "https://api.github.com/repos/Codertocat/Hello-World/pulls/1" };
    expect(parseCommentEvent("issue_comment", onIssue).onPullRequest).toBe(true);
    onIssue.comment.user = { ...onIssue.comment.user, login: "renovate[bot]", type: "Bot" };
    expect(parseCommentEvent("issue_comment", onIssue).author).toEqual({ login: "renovate[bot]", isBot: true });
  });

  it("names the field a payload lacks, and the event a mode does not take", () => {
    const broken = examplePayload<{ comment: { id?: number } }>("issue_comment");
    delete broken.comment.id;
    expect(() => parseCommentEvent("issue_comment", broken)).toThrow(
      "the issue_comment payload is not a comment event: comment.id: ",
    );
    expect(() => parseCommentEvent("pull_request", {})).toThrow(
      "/perf commands come as issue_comment events, not pull_request",
    );
  });
});

describe("push", () => {
  it("promotes only a push to the default branch", () => {
    const toMaster = examplePayload<Push>("push", (e) => e.ref === "refs/heads/master" && !e.deleted);
    expect(parsePushToDefaultBranch(toMaster)).toBe("6113728f27ae82c7b1a177c8d03f9e96e0adf246");
    const tag = examplePayload<Push>("push", (e) => e.ref === "refs/tags/simple-tag" && !e.deleted);
    expect(() => parsePushToDefaultBranch(tag)).toThrow(
      "promotion follows pushes to the default branch (refs/heads/master); this push is to refs/tags/simple-tag",
    );
    const deleted = { ...toMaster, deleted: true, after: "0".repeat(40) };
    expect(() => parsePushToDefaultBranch(deleted)).toThrow(/this push is to refs\/heads\/master and deletes it/);
  });
});
