// The history page's script, inlined into the page after uPlot (docs/design/0025-history-page.md):
// it draws each key's three charts from the page's embedded data, with zoom (drag across a
// chart; double-click resets), cursors synced per key, and a tooltip that says what each point
// is. It reads only the page; the page's Content-Security-Policy forbids any request.
(() => {
  const data = JSON.parse(document.getElementById("chart-data").textContent);
  const css = getComputedStyle(document.documentElement);
  const color = (name) => css.getPropertyValue(`--${name}`).trim();
  const points = (stroke, size) => ({ show: true, size, stroke, fill: stroke });
  const none = () => null;
  const pct = (v) => (v === null || v === undefined ? "—" : `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)}%`);
  const msv = (v) => (v === null || v === undefined ? "—" : `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(3)} ms`);

  // Vertical whiskers from low to high columns, for every x that has them, in the series' colour.
  const whiskers = (low, high, pick) => (u) => {
    const ctx = u.ctx;
    ctx.save();
    ctx.lineWidth = 1.5 * devicePixelRatio;
    for (let i = 0; i < u.data[0].length; i++) {
      if (low[i] === null || high[i] === null) continue;
      ctx.strokeStyle = pick(i);
      const x = u.valToPos(u.data[0][i], "x", true);
      ctx.beginPath();
      ctx.moveTo(x, u.valToPos(low[i], "y", true));
      ctx.lineTo(x, u.valToPos(high[i], "y", true));
      ctx.stroke();
    }
    ctx.restore();
  };

  // The hovered point's own words, beside the cursor.
  const tooltip = (labels) => (u) => {
    const tip = u.root.querySelector(".tip");
    const i = u.cursor.idx;
    if (i === null || i === undefined || !labels[i]) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = labels[i];
    tip.style.display = "block";
    const left = u.cursor.left ?? 0;
    tip.style.left = `${Math.min(left + 12, u.over.clientWidth - tip.offsetWidth)}px`;
    tip.style.top = `${(u.cursor.top ?? 0) + 12}px`;
  };

  const charts = [];
  const make = (target, chart, title, yLabel, series, extra = {}) => {
    const columns = series.map((s) => chart.columns[s.column]);
    const u = new uPlot(
      {
        title,
        width: target.clientWidth || 800,
        height: 260,
        scales: { x: { time: true } },
        axes: [{}, { label: yLabel, size: 70 }],
        cursor: { sync: { key: target.dataset.key }, drag: { x: true, y: false } },
        series: [{}, ...series.map(({ column: _, ...s }) => s)],
        hooks: {
          setCursor: [tooltip(chart.labels)],
          // The x range shown, on the chart's element: what a zoom changed, for a reader's tools.
          setScale: [
            (u, key) =>
              key === "x" &&
              Object.assign(target.dataset, { xMin: String(u.scales.x.min), xMax: String(u.scales.x.max) }),
          ],
          ...(extra.hooks ?? {}),
        },
      },
      [chart.x, ...columns],
      target,
    );
    const tip = document.createElement("div");
    tip.className = "tip";
    u.over.appendChild(tip);
    u.over.addEventListener("mouseleave", () => {
      tip.style.display = "none";
    });
    charts.push([u, target]);
    return u;
  };

  // A series of points (each x a mark), and a stepped line (a level that holds until it changes).
  const dots = (column, label, colorName, format, size = 7) => ({
    column,
    label,
    stroke: color(colorName),
    paths: none,
    points: points(color(colorName), size),
    value: (_, v) => format(v),
  });
  const steps = (column, label, colorName, format, dash) => ({
    column,
    label,
    stroke: color(colorName),
    ...(dash ? { dash } : { width: 2 }),
    paths: uPlot.paths.stepped({ align: 1 }),
    spanGaps: true,
    points: { show: false },
    value: (_, v) => format(v),
  });

  for (const k of data.keys) {
    const level = k.level.columns;
    make(
      document.getElementById(`level-${k.id}`),
      k.level,
      "Main's level: the steps compounded, and the drift measured",
      "% of the first champion",
      [
        steps("main", "steps compounded", "grey", pct),
        dots("promoted", "promotion", "accent", pct),
        dots("drift", "measured drift (95% CI)", "drift", pct, 9),
      ],
      { hooks: { draw: [whiskers(level.driftLow, level.driftHigh, () => color("drift"))] } },
    );

    const g = k.gates.columns;
    const verdictOf = (i) => (g.red[i] !== null ? "red" : g.green[i] !== null ? "green" : "grey");
    make(
      document.getElementById(`gates-${k.id}`),
      k.gates,
      "Every gate: estimate and interval, floor and block threshold",
      "challenger − champion, ms",
      [
        dots("red", "red", "red", msv),
        dots("green", "green", "green", msv),
        dots("grey", "grey", "grey", msv),
        {
          ...dots("merged", "red merged", "red", msv),
          points: { show: true, size: 15, width: 2, stroke: color("red"), fill: "transparent" },
        },
        steps("floor", "A/A floor ±", "floor", msv, [4, 4]),
        steps("floorNegative", "A/A floor −", "floor", msv, [4, 4]),
        steps("threshold", "block threshold", "red", msv, [8, 4]),
      ],
      { hooks: { draw: [whiskers(g.low, g.high, (i) => color(verdictOf(i)))] } },
    );

    const limit = k.budget.limitPercent === null ? "" : ` against its budget of ${k.budget.limitPercent}%`;
    make(
      document.getElementById(`budget-${k.id}`),
      k.budget,
      `Main's change over the trailing 30 days${limit}`,
      "% of main's level",
      [
        // Main's 30 days change between the moments it is read at: a plain line, not steps.
        {
          column: "main",
          label: "main, 30 days",
          stroke: color("accent"),
          width: 2,
          spanGaps: true,
          points: points(color("accent"), 5),
          value: (_, v) => pct(v),
        },
        {
          column: "limit",
          label: "budget",
          stroke: color("red"),
          dash: [8, 4],
          spanGaps: true,
          points: { show: false },
          value: (_, v) => pct(v),
        },
      ],
    );
  }

  window.addEventListener("resize", () => {
    for (const [u, target] of charts) u.setSize({ width: target.clientWidth, height: 260 });
  });
  document.body.dataset.charts = String(charts.length);
})();
