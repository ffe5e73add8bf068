// Renders the inputs and outputs tables of action.yml into README.md between markers, and the
// capacity of the README's example config (perf-gate capacity on its config reference). With
// --check it fails when the README's tables are not what action.yml and the CLI say.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";

const action = parse(readFileSync("action.yml", "utf8"));
const cell = (s) =>
  String(s ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ")
    .trim();
const inputs = [
  "| input | required | default | description |",
  "| --- | --- | --- | --- |",
  ...Object.entries(action.inputs).map(
    ([name, i]) =>
      `| \`${name}\` | ${i.required ? "yes" : "no"} | ${i.default === undefined || i.default === "" ? "" : `\`${cell(i.default)}\``} | ${cell(i.description)} |`,
  ),
].join("\n");
const outputs = [
  "| output | description |",
  "| --- | --- |",
  ...Object.entries(action.outputs).map(([name, o]) => `| \`${name}\` | ${cell(o.description)} |`),
].join("\n");

let readme = readFileSync("README.md", "utf8");
const capacity = capacityOf(readme);
for (const [name, table] of [
  ["inputs", inputs],
  ["outputs", outputs],
  ["capacity", capacity],
]) {
  const re = new RegExp(`(<!-- ${name}:start -->)[\\s\\S]*?(<!-- ${name}:end -->)`);
  if (!re.test(readme)) {
    console.error(`README.md lacks the <!-- ${name}:start --> … <!-- ${name}:end --> markers`);
    process.exit(1);
  }
  readme = readme.replace(re, (_, start, end) => `${start}\n${table}\n${end}`);
}
if (process.argv.includes("--check")) {
  if (readme !== readFileSync("README.md", "utf8")) {
    console.error(
      "README.md's inputs/outputs tables differ from action.yml, or its capacity section from perf-gate capacity: run 'npm run docs' and commit README.md.",
    );
    process.exit(1);
  }
  console.log("README.md's inputs/outputs tables match action.yml, and its capacity section perf-gate capacity");
} else {
  writeFileSync("README.md", readme);
}

/** `perf-gate capacity` (the committed bundle) on the first yaml block of the README's config reference. */
function capacityOf(text) {
  const block = /### Config reference[^\n]*\n+```yaml\n([\s\S]*?)\n```/.exec(text);
  if (!block) {
    console.error(
      "README.md lacks the yaml block of its config reference, which the capacity section is computed from",
    );
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "perf-gate-docs-"));
  try {
    writeFileSync(join(dir, "perf-gate.yml"), `${block[1]}\n`);
    const out = execFileSync(process.execPath, ["dist/cli.js", "capacity", "--config", join(dir, "perf-gate.yml")], {
      encoding: "utf8",
    });
    return out.trimEnd().replace(join(dir, "perf-gate.yml"), "the config reference's example");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
