// Renders the inputs and outputs tables of action.yml into README.md between markers. With
// --check it fails when the README's tables are not what action.yml says.
import { readFileSync, writeFileSync } from "node:fs";
import { parse } from "yaml";

const action = parse(readFileSync("action.yml", "utf8"));
const cell = (s) => String(s ?? "").replace(/\|/g, "\\|").replace(/\n/g, " ").trim();
const inputs = [
  "| input | required | default | description |",
  "| --- | --- | --- | --- |",
  ...Object.entries(action.inputs).map(([name, i]) =>
    `| \`${name}\` | ${i.required ? "yes" : "no"} | ${i.default === undefined || i.default === "" ? "" : `\`${cell(i.default)}\``} | ${cell(i.description)} |`),
].join("\n");
const outputs = [
  "| output | description |",
  "| --- | --- |",
  ...Object.entries(action.outputs).map(([name, o]) => `| \`${name}\` | ${cell(o.description)} |`),
].join("\n");

let readme = readFileSync("README.md", "utf8");
for (const [name, table] of [["inputs", inputs], ["outputs", outputs]]) {
  const re = new RegExp(`(<!-- ${name}:start -->)[\\s\\S]*?(<!-- ${name}:end -->)`);
  if (!re.test(readme)) {
    console.error(`README.md lacks the <!-- ${name}:start --> … <!-- ${name}:end --> markers`);
    process.exit(1);
  }
  readme = readme.replace(re, (_, start, end) => `${start}\n${table}\n${end}`);
}
if (process.argv.includes("--check")) {
  if (readme !== readFileSync("README.md", "utf8")) {
    console.error("README.md's inputs/outputs tables differ from action.yml: run 'npm run docs' and commit README.md.");
    process.exit(1);
  }
  console.log("README.md's inputs/outputs tables match action.yml");
} else {
  writeFileSync("README.md", readme);
}
