// node scripts/release-notes.mjs TAG: checks that a release tag (v1.2.3) is the version in
// package.json and has its section in CHANGELOG.md, and prints that section, the release's
// notes. The release workflow runs it before anything is built or published.
import { readFileSync } from "node:fs";

const tag = process.argv[2] ?? "";
const fail = (msg) => {
  console.error(`release-notes: ${msg}`);
  process.exit(1);
};

if (!/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(tag))
  fail(`the tag must look like v1.2.3 or v1.2.3-rc.1, not ${JSON.stringify(tag)}`);
const version = tag.slice(1);
const { version: packaged } = JSON.parse(readFileSync("package.json", "utf8"));
if (packaged !== version)
  fail(
    `the tag ${tag} is not package.json's version ${packaged}: set it (npm version ${version} --no-git-tag-version), npm run build, and commit`,
  );

// Keep a Changelog: "## [1.2.3] - 2026-11-22", up to the next "## " heading.
const changelog = readFileSync("CHANGELOG.md", "utf8");
const heading = new RegExp(`^## \\[${version.replace(/\./g, "\\.")}\\] - \\d{4}-\\d{2}-\\d{2}$`, "m");
const start = changelog.search(heading);
if (start < 0)
  fail(`CHANGELOG.md has no "## [${version}] - YYYY-MM-DD" section: move the Unreleased entries under one`);
const body = changelog.slice(start).split("\n").slice(1);
const end = body.findIndex((line) => line.startsWith("## ") || /^\[[^\]]+\]: /.test(line));
const notes = body
  .slice(0, end < 0 ? undefined : end)
  .join("\n")
  .trim();
if (notes === "") fail(`CHANGELOG.md's section for ${version} is empty`);
console.log(notes);
