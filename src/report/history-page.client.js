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

  for (const k of data.keys) {
    const level = k.level.columns;
    make(
      document.getElementById(`level-${k.id}`),
      k.level,
      "Main's level: the steps summed, and the drift measured",
      "% of the first champion",
      [
        {
          column: "summed",
          label: "steps summed",
          stroke: color("grey"),
          width: 2,
          paths: uPlot.paths.stepped({ align: 1 }),
          spanGaps: true,
          points: { show: false },
          value: (_, v) => pct(v),
        },
        {
          column: "promoted",
          label: "promotion",
          stroke: color("accent"),
          paths: none,
          points: points(color("accent"), 7),
          value: (_, v) => pct(v),
        },
        {
          column: "drift",
          label: "measured drift (95% CI)",
          stroke: color("drift"),
          paths: none,
          points: points(color("drift"), 9),
          value: (_, v) => pct(v),
        },
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
        {
          column: "red",
          label: "red",
          stroke: color("red"),
          paths: none,
          points: points(color("red"), 7),
          value: (_, v) => msv(v),
        },
        {
          column: "green",
          label: "green",
          stroke: color("green"),
          paths: none,
          points: points(color("green"), 7),
          value: (_, v) => msv(v),
        },
        {
          column: "grey",
          label: "grey",
          stroke: color("grey"),
          paths: none,
          points: points(color("grey"), 7),
          value: (_, v) => msv(v),
        },
        {
          column: "merged",
          label: "red merged",
          stroke: color("red"),
          paths: none,
          points: { show: true, size: 15, width: 2, stroke: color("red"), fill: "transparent" },
          value: (_, v) => msv(v),
        },
        {
          column: "floor",
          label: "A/A floor ±",
          stroke: color("floor"),
          dash: [4, 4],
          paths: uPlot.paths.stepped({ align: 1 }),
          spanGaps: true,
          points: { show: false },
          value: (_, v) => msv(v),
        },
        {
          column: "floorNegative",
          label: "A/A floor −",
          stroke: color("floor"),
          dash: [4, 4],
          paths: uPlot.paths.stepped({ align: 1 }),
          spanGaps: true,
          points: { show: false },
          value: (_, v) => msv(v),
        },
        {
          column: "threshold",
          label: "block threshold",
          stroke: color("red"),
          dash: [8, 4],
          paths: uPlot.paths.stepped({ align: 1 }),
          spanGaps: true,
          points: { show: false },
          value: (_, v) => msv(v),
        },
      ],
      { hooks: { draw: [whiskers(g.low, g.high, (i) => color(verdictOf(i)))] } },
    );

    make(
      document.getElementById(`budget-${k.id}`),
      k.budget,
      `Main's change over the trailing 30 days${k.budget.limitPercent === null ? "" : ` against its budget of ${k.budget.limitPercent}%`}`,
      "% of main's level",
      [
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
