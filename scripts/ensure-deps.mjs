// Runs before `npm test`: on a fresh clone, install the locked dependencies first, so that
// the README's test command works on its own.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

if (!existsSync("node_modules/.package-lock.json") || !existsSync("node_modules/vitest")) {
  console.log("node_modules is missing: npm ci");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
}
