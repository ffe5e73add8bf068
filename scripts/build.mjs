// Bundles the action (src/index.ts → dist/index.js) and the CLI (src/cli.ts → dist/cli.js)
// with esbuild. With --check it builds into a temporary directory and fails when the
// committed dist/ differs, so a stale bundle cannot land.
import { build } from "esbuild";
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const check = process.argv.includes("--check");
const outdir = check ? mkdtempSync(join(tmpdir(), "perf-gate-dist-")) : "dist";
const entries = { index: "src/index.ts", cli: "src/cli.ts" };

await build({
  entryPoints: Object.fromEntries(Object.entries(entries).filter(([, f]) => existsSync(f))),
  outdir,
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  legalComments: "none",
  logLevel: "warning",
  // ESM bundles of CommonJS dependencies still call require().
  banner: { js: "import { createRequire as __perfGateCreateRequire } from 'node:module';\nconst require = __perfGateCreateRequire(import.meta.url);" },
});

if (check) {
  const stale = readdirSync(outdir).filter((f) => {
    const committed = join("dist", f);
    return !existsSync(committed) || readFileSync(committed, "utf8") !== readFileSync(join(outdir, f), "utf8");
  });
  rmSync(outdir, { recursive: true, force: true });
  if (stale.length > 0) {
    console.error(`dist/ is stale (${stale.join(", ")}): run 'npm run build' and commit dist/.`);
    process.exit(1);
  }
  console.log("dist/ matches the source");
}
