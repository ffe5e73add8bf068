// npm run bench:sensitivity (step 2 of 2): bundles scripts/sensitivity.ts with the product's
// analysis code (esbuild, as the build does) and runs it on what step 1 kept.
//   node scripts/sensitivity-report.mjs [DIR]   (default .perf-gate/sensitivity)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const out = mkdtempSync(join(tmpdir(), "perf-gate-sensitivity-"));
try {
  const outfile = join(out, "sensitivity.mjs");
  await build({
    entryPoints: ["scripts/sensitivity.ts"],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    logLevel: "warning",
    banner: { js: "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);" },
  });
  await import(pathToFileURL(outfile).href);
} finally {
  rmSync(out, { recursive: true, force: true });
}
