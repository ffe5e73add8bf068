// Renders a real report as GitHub shows it and takes a screenshot: the results of real load
// generator runs (by default the demo's: `npm run demo` first) are analysed with the action's own
// code, the Markdown is rendered with a GFM renderer (marked) and GitHub's own stylesheet
// (github-markdown-css), and Debian's headless Chromium (apt-get install chromium) photographs it.
//
//   node scripts/report-screenshot.mjs [--config FILE] [--aa AA-RESULT.json | --no-aa] [--out docs/report.png] [RESULT.json…]
//
// With --aa, the A/A run's half-width is the floor the report quotes (as calibration records it),
// and a second screenshot shows the A/A report itself (OUT with -aa before .png); with --no-aa
// the report quotes no floor (a host not yet calibrated) and there is one screenshot.
// The renderer and the browser driver are installed on demand into a cache in the temp directory.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const DEPS = { marked: "18.2.1", "github-markdown-css": "5.9.0", "playwright-core": "1.65.1" };
const CHROMIUM = "/usr/bin/chromium";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    config: { type: "string", default: "benchmark-host/examples/service/perf-gate.yml" },
    aa: { type: "string", default: ".perf-gate/demo/report-aa/result.json" },
    "no-aa": { type: "boolean", default: false },
    out: { type: "string", default: "docs/report.png" },
    "run-url": { type: "string", default: "https://github.com/example/service/actions/runs/1" },
  },
});
const results = positionals.length > 0 ? positionals : [".perf-gate/demo/report-ab/result.json"];
for (const f of [...results, ...(values["no-aa"] ? [] : [values.aa]), values.config])
  if (!existsSync(f)) throw new Error(`${f}: not found (run \`npm run demo\` first, or name result files)`);
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM}: not found (apt-get install chromium)`);

// The action's own analysis and report code, bundled from src/ for this script.
const work = mkdtempSync(join(tmpdir(), "perf-gate-screenshot-"));
try {
  const entry = join(work, "report.mjs");
  await build({
    stdin: {
      contents: `export { analyze } from "./src/analysis/verdict"; export { settingsFor } from "./src/experiment/decide"; export { parseResult } from "./src/contract/result";
        export { parseConfig } from "./src/config/gate-config"; export { markdownReport } from "./src/report/markdown"; export { halfWidth } from "./src/analysis/floors";`,
      resolveDir: process.cwd(),
      loader: "ts",
    },
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: entry,
    logLevel: "warning",
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  });
  const r = await import(pathToFileURL(entry).href);
  const config = r.parseConfig(readFileSync(values.config, "utf8"), values.config);
  const settings = r.settingsFor(config, { seed: 1 });
  const load = (file) =>
    JSON.parse(readFileSync(file, "utf8")).map((doc, i) => ({
      name: doc.plan?.run_id ?? `${file}#${i}`,
      result: r.parseResult(file, doc),
    }));
  const aa = values["no-aa"] ? null : r.analyze(load(values.aa), settings);
  const floorMs = Object.fromEntries((aa?.comparisons ?? []).map((c) => [c.key, r.halfWidth(c.ciMs)]));
  const ab = r.analyze(results.flatMap(load), { ...settings, floorMs });

  const deps = join(tmpdir(), `perf-gate-screenshot-deps-${Object.values(DEPS).join("-")}`);
  if (!existsSync(join(deps, "node_modules/playwright-core"))) {
    mkdirSync(deps, { recursive: true });
    execFileSync(
      "npm",
      [
        "install",
        "--prefix",
        deps,
        "--no-audit",
        "--no-fund",
        "--no-save",
        ...Object.entries(DEPS).map(([n, v]) => `${n}@${v}`),
      ],
      { stdio: "inherit" },
    );
  }
  const { marked } = await import(pathToFileURL(join(deps, "node_modules/marked/lib/marked.esm.js")).href);
  const { chromium } = await import(pathToFileURL(join(deps, "node_modules/playwright-core/index.mjs")).href);
  const css = readFileSync(join(deps, "node_modules/github-markdown-css/github-markdown-light.css"), "utf8");

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const shots = [
      [values.out, r.markdownReport(ab, { runUrl: values["run-url"] })],
      ...(aa ? [[values.out.replace(/\.png$/, "-aa.png"), r.markdownReport(aa, { runUrl: values["run-url"] })]] : []),
    ];
    for (const [out, markdown] of shots) {
      // As GitHub shows a comment: its stylesheet, a column about 900 px wide.
      const html = `<!doctype html><meta charset="utf-8"><style>${css}\nbody{margin:0;background:#fff}.markdown-body{box-sizing:border-box;max-width:920px;padding:24px 32px}</style><article class="markdown-body">${marked.parse(markdown, { gfm: true })}</article>`;
      const page = await browser.newPage({ viewport: { width: 920, height: 600 }, deviceScaleFactor: 1 });
      await page.setContent(html, { waitUntil: "load" });
      await page.screenshot({ path: resolve(out), fullPage: true });
      console.log(`${out}: ${markdown.split("\n")[0]}`);
    }
  } finally {
    await browser.close();
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
