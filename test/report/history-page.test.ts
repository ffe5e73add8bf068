/// <reference lib="dom" />
// The history page: one self-contained HTML file. Opened in a real browser (Debian's headless
// chromium through playwright-core), it draws its charts without an error or a single request,
// shows every promotion, and its numbers are the history's.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { historyChangePoints, mainChange } from "../../src/analysis/main-history";
import { signedMs } from "../../src/report/format";
import { historyPage } from "../../src/report/history-page";
import { busyHistory, CHROMIUM, CHROMIUM_FLAGS } from "../support/history";
import { scratchDir } from "../support/scratch";

describe("the history page", () => {
  const history = busyHistory();
  const page = historyPage(history, { source: "a test history" });
  let dir: string;
  let browser: Browser | null = null;

  beforeAll(async () => {
    dir = scratchDir("history-page");
    if (existsSync(CHROMIUM)) browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("is one file that asks for nothing: no external reference, and a policy that forbids any", () => {
    expect(page).toMatch(
      /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">/,
    );
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import|url\(\s*["']?https?:/);
    // The embedded JSON cannot close its element, whatever the history holds.
    const json = page.slice(page.indexOf('<script type="application/json" id="history">'));
    expect(json.slice(0, json.indexOf("</script>"))).not.toMatch(/<\/|<!--/);
    expect(Buffer.byteLength(page)).toBeLessThan(200 * 1024);
  });

  it("renders its charts in chromium with no console error and no request, every promotion listed with the history's numbers", async (ctx) => {
    if (!browser) return ctx.skip(`${CHROMIUM} is not installed (apt-get install chromium)`);
    const file = join(dir, "history.html");
    writeFileSync(file, page);
    const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    const requests: string[] = [];
    tab.on(
      "console",
      (m) => (m.type() === "error" || m.type() === "warning") && problems.push(`console ${m.type()}: ${m.text()}`),
    );
    tab.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    tab.on("request", (r) => r.url() !== `file://${file}` && requests.push(r.url()));
    await tab.goto(`file://${file}`);
    await tab.waitForFunction(() => document.body.dataset.charts !== undefined);
    expect(problems).toEqual([]);
    expect(requests).toEqual([]);
    // Three charts per key, each a drawn canvas.
    expect(await tab.evaluate(() => document.body.dataset.charts)).toBe("6");
    const inked = await tab.evaluate(() =>
      [...document.querySelectorAll<HTMLCanvasElement>(".uplot canvas")].map((c) => {
        const pixels = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) ink++;
        return ink;
      }),
    );
    expect(inked).toHaveLength(6);
    for (const ink of inked) expect(ink).toBeGreaterThan(1000);

    // Every promotion and rollback, in order, with its champion, pull request and step as the history says.
    const changes = history.entries.filter((e) => e.change);
    const rows = await tab.$$eval("#promotions tr.change", (trs) =>
      trs.map((tr) => ({
        kind: tr.getAttribute("data-kind"),
        sha: tr.getAttribute("data-sha"),
        pr: tr.getAttribute("data-pr"),
        text: tr.textContent,
        steps: [...tr.querySelectorAll("[data-estimate]")].map((d) => Number(d.getAttribute("data-estimate"))),
        links: [...tr.querySelectorAll("a")].map((a) => a.getAttribute("href")),
      })),
    );
    expect(rows.map((r) => [r.kind, r.sha])).toEqual(changes.map((e) => [e.kind, e.change!.sha]));
    for (const [i, e] of changes.entries()) {
      const step = e.change!.step?.gate.comparisons[0];
      if (!step) continue;
      expect(rows[i]!.steps).toEqual([step.estimate_ms]);
      expect(rows[i]!.text).toContain(`${signedMs(step.estimate_ms)} ms`);
      expect(rows[i]!.pr).toBe(String(e.change!.pull_request));
      // The pull request and its gate run, linked from the gate's own workflow URL.
      expect(rows[i]!.links).toEqual([
        `https://github.com/o/r/pull/${e.change!.pull_request}`,
        e.change!.step!.gate.url,
      ]);
    }
    // Every gate of a key, and every drift run, with its estimate.
    const gates = await tab.$$eval("#key-work-1000-p99 tr.gate", (trs) =>
      trs.map((tr) => Number(tr.getAttribute("data-estimate"))),
    );
    const recorded = history.entries
      .filter((e) => e.gate && e.gate.comparisons[0]!.workload === "work")
      .map((e) => e.gate!.comparisons[0]!.estimate_ms);
    expect(gates).toEqual([...recorded].reverse());
    const drift = await tab.$eval("#key-work-1000-p99 tr.drift", (tr) => ({
      estimate: Number(tr.getAttribute("data-estimate")),
      text: tr.textContent,
    }));
    expect(drift.estimate).toBe(1.1);
    expect(drift.text).toContain("+1.10 ms");
    // Main's 30 days as the budget computes them, and the change point called out.
    const main = await tab.$eval("#key-work-1000-p99 .main-change", (b) => Number(b.getAttribute("data-percent")));
    expect(main).toBeCloseTo(mainChange(history, "work@1000", 99, Date.parse(history.time)).percent, 9);
    expect(historyChangePoints(history)).toHaveLength(1);
    expect(await tab.$$eval("#change-points li", (li) => li.length)).toBe(1);

    // Hover says what a point is; a drag across the chart zooms it.
    const level = (await tab.$("#level-work-1000-p99 .u-over"))!;
    await level.scrollIntoViewIfNeeded();
    const box = (await level.boundingBox())!;
    await tab.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 3 });
    await tab
      .waitForFunction(
        () => getComputedStyle(document.querySelector("#level-work-1000-p99 .tip")!).display === "block",
        undefined,
        { timeout: 5000 },
      )
      .catch(() => {});
    const tip = await tab.$eval("#level-work-1000-p99 .tip", (t) => ({
      shown: getComputedStyle(t).display,
      text: t.textContent,
    }));
    expect(tip.shown).toBe("block");
    expect(tip.text).toMatch(/promoted|drift|rollback/);
    const before = await tab.$eval("#gates-work-1000-p99", (d) => d.getAttribute("data-x-max"));
    const gatesElement = (await tab.$("#gates-work-1000-p99 .u-over"))!;
    await gatesElement.scrollIntoViewIfNeeded();
    const gatesOver = (await gatesElement.boundingBox())!;
    await tab.mouse.move(gatesOver.x + gatesOver.width * 0.2, gatesOver.y + 20);
    await tab.mouse.down();
    await tab.mouse.move(gatesOver.x + gatesOver.width * 0.5, gatesOver.y + 20, { steps: 5 });
    await tab.mouse.up();
    const after = await tab.$eval("#gates-work-1000-p99", (d) => [
      Number(d.getAttribute("data-x-min")),
      Number(d.getAttribute("data-x-max")),
    ]);
    expect(after[1]).toBeLessThan(Number(before));
    expect(problems).toEqual([]);
    await tab.close();
  });
});
