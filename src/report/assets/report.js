// titan report's page renderer. Reads the report (JSON in <script id="titan-report-data">, written
// by src/report/page.cc) and draws each section's blocks: plots with uPlot (inlined before this
// script), heatmaps on a canvas, tables, key figures and notes. No network access: the page's
// Content-Security-Policy forbids every fetch, and nothing here asks for one.
//
// Self-check for tests and benchmarks, on <html> once everything is drawn:
//   data-titan-ready="1", data-titan-plots=<plots and heatmaps drawn>,
//   data-titan-render-ms=<ms from script start to the last plot>,
//   data-titan-errors=<JSON array of errors caught on the page (window.onerror, console.error)>.
(function () {
  "use strict";
  const started = performance.now();
  const errors = [];
  const root = document.documentElement;
  const recordError = (text) => {
    errors.push(String(text));
    root.dataset.titanErrors = JSON.stringify(errors);
  };
  window.addEventListener("error", (e) => recordError(e.message || e));
  window.addEventListener("unhandledrejection", (e) => recordError(e.reason));
  document.addEventListener("securitypolicyviolation", (e) =>
    recordError("CSP violation: " + e.violatedDirective + " " + e.blockedURI));
  const consoleError = console.error;
  console.error = function (...args) {
    recordError(args.join(" "));
    consoleError.apply(console, args);
  };

  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
    "#17becf", "#7f7f7f", "#bcbd22"];
  const TONES = { bad: "#c62828", warn: "#ef6c00", info: "#1565c0", ok: "#2e7d32" };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c !== null && c !== undefined) node.append(c);
    }
    return node;
  }

  // Numbers as people read them: 3 significant digits, thousands kept whole.
  function fmt(v) {
    if (v === null || v === undefined) return "";
    if (typeof v !== "number") return String(v);
    if (!isFinite(v)) return String(v);
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1e5) {  // SI prefixes keep axis labels short: 4.2G, 310M, 150k
      const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
      const [scale, unit] = units.find(([u]) => a >= u);
      return Number((v / scale).toPrecision(3)) + unit;
    }
    if (a >= 1000) return v.toFixed(0);
    if (a >= 1) return String(Number(v.toPrecision(4)));
    return String(Number(v.toPrecision(3)));
  }
  // Numbers in tables, to copy: whole numbers as they are, others with 5 significant digits.
  function fmtCell(v) {
    if (typeof v !== "number" || !isFinite(v)) return fmt(v);
    return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(5)));
  }
  // A "percentile" axis holds 1 / (1 - q): 2 is p50, 100 is p99.
  // A categorical axis holds 0, 1, 2 ... for its named positions.
  const fmtAxis = (axis, v) => {
    if (axis.categories) return Number.isInteger(v) && v >= 0 && v < axis.categories.length ? axis.categories[v] : "";
    if (v === null || v === undefined) return "";
    return axis.format === "percentile" ? "p" + fmt(100 * (1 - 1 / v)) : fmt(v);
  };
  const axisTitle = (axis) => axis.label + (axis.unit ? " (" + axis.unit + ")" : "");

  function table(columns, rows, caption) {
    const head = el("tr", {}, ...columns.map((c) => el("th", {}, c)));
    const body = el("tbody");
    for (const row of rows) {
      body.append(el("tr", {}, ...row.map((v) => el("td", typeof v === "string" ? { class: "text" } : {}, fmtCell(v)))));
    }
    return el("table", {}, caption ? el("caption", {}, caption) : null, el("thead", {}, head), body);
  }

  // The plotted numbers as a table, built when first opened (a plot may hold thousands of points).
  function numbersTable(columns, rowsFn, note, summary) {
    const details = el("details", { class: "numbers" }, el("summary", {}, summary || "numbers"));
    details.addEventListener("toggle", () => {
      if (!details.open || details.dataset.built) return;
      details.dataset.built = "1";
      if (note) details.append(el("p", { class: "note" }, note));
      details.append(table(columns, rowsFn()));
    }, { passive: true });
    return details;
  }

  // Vertical marks (instants or ranges) and horizontal reference lines, drawn over the series.
  function overlayPlugin(spec) {
    return {
      hooks: {
        draw: [(u) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          ctx.save();
          ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
          ctx.textAlign = "left";  // uPlot leaves its axis alignment set
          ctx.textBaseline = "alphabetic";
          const labelEnds = [-1e9, -1e9, -1e9];  // three rows of labels, so close marks stay legible
          for (const m of spec.marks || []) {
            const x0 = u.valToPos(m.x, "x", true);
            const color = TONES[m.tone] || TONES.warn;
            if (m.x2 !== undefined) {
              const x1 = u.valToPos(m.x2, "x", true);
              ctx.fillStyle = color + "22";
              ctx.fillRect(x0, top, Math.max(x1 - x0, 2), height);
            } else {
              ctx.strokeStyle = color;
              ctx.setLineDash([4, 3]);
              ctx.beginPath();
              ctx.moveTo(x0, top);
              ctx.lineTo(x0, top + height);
              ctx.stroke();
              ctx.setLineDash([]);
            }
            if (m.label) {
              const w = ctx.measureText(m.label).width;
              const row = labelEnds.findIndex((end) => end < x0);
              if (row >= 0) {
                labelEnds[row] = x0 + w + 8;
                ctx.fillStyle = color;
                ctx.fillText(m.label, x0 + 3, top + (12 + 13 * row) * devicePixelRatio);
              }
            }
          }
          for (const h of spec.hlines || []) {
            const y = u.valToPos(h.y, h.axis || "y", true);
            if (!isFinite(y)) continue;
            ctx.strokeStyle = TONES[h.tone] || TONES.bad;
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([6, 4]);
            ctx.beginPath();
            ctx.moveTo(left, y);
            ctx.lineTo(left + width, y);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.fillStyle = ctx.strokeStyle;
            if (h.label) ctx.fillText(h.label, left + width - ctx.measureText(h.label).width - 4, y - 4);
          }
          ctx.restore();
        }],
      },
    };
  }

  function plotWidth(container) {
    return Math.max(320, Math.min(container.clientWidth || 900, 1100) - 8);
  }

  function drawPlot(spec, container) {
    const data = spec.data.map((col) => col.map((v) => (v === null ? null : v)));
    const shown = data.slice();  // stacked plots draw cumulative sums and show the raw values
    if (spec.stacked) {
      let sum = new Array(data[0].length).fill(0);
      for (let i = 1; i < data.length; i++) {
        sum = sum.map((s, k) => s + (data[i][k] || 0));
        shown[i] = sum.slice();
      }
    }
    const bars = uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 60] }) : undefined;
    const stepped = uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    const series = [{ label: axisTitle(spec.x), value: (u, v) => fmtAxis(spec.x, v) }];
    spec.series.forEach((s, i) => {
      const color = s.color || PALETTE[i % PALETTE.length];
      const style = s.style || "line";
      const entry = {
        label: s.label + (s.unit ? " (" + s.unit + ")" : ""),
        stroke: color,
        width: s.width || (style === "points" ? 0 : 1.5),
        dash: s.dash ? [6, 4] : undefined,
        scale: s.axis === "y2" ? "y2" : "y",
        spanGaps: !!s.span_gaps,
        points: { show: style === "points", size: 4, fill: color },
        value: (u, v, si, idx) => fmt(idx === null || idx === undefined ? v : data[i + 1][idx]),
      };
      if (style === "bars" || spec.stacked) {
        entry.paths = bars;
        entry.fill = color + (spec.stacked ? "" : "aa");
        entry.width = 0;
      } else if (style === "step") {
        entry.paths = stepped;
      } else if (style === "area") {
        entry.fill = color + "33";
      }
      series.push(entry);
    });
    // uPlot draws series in order: stacked bars go from the tallest sum down so each stays visible.
    const order = series.slice(1).map((s, i) => i);
    if (spec.stacked) order.reverse();
    const useSeries = [series[0], ...order.map((i) => series[i + 1])];
    const useData = [shown[0], ...order.map((i) => shown[i + 1])];
    const scales = {
      x: { time: !!spec.x.time, distr: spec.x.log ? 3 : 1 },
      y: { distr: spec.y.log ? 3 : 1, auto: true },
    };
    if (spec.y.min !== undefined || spec.y.max !== undefined) {
      scales.y.range = (u, lo, hi) => [spec.y.min !== undefined ? spec.y.min : lo,
        spec.y.max !== undefined ? spec.y.max : hi];
    }
    const axes = [
      { label: axisTitle(spec.x), values: spec.x.time ? undefined : (u, vals) => vals.map((v) => fmtAxis(spec.x, v)) },
      { label: axisTitle(spec.y), values: (u, vals) => vals.map(fmt), size: 60 },
    ];
    if (spec.y2) {
      scales.y2 = { distr: spec.y2.log ? 3 : 1, auto: true };
      axes.push({ scale: "y2", side: 1, label: axisTitle(spec.y2), grid: { show: false },
        values: (u, vals) => vals.map(fmt), size: 60 });
    }
    if (spec.hlines && spec.hlines.length) {
      // Keep reference lines (the SLO) inside the y range even when every value is below them.
      const top = Math.max(...spec.hlines.filter((h) => (h.axis || "y") === "y").map((h) => h.y));
      if (isFinite(top) && !scales.y.range) {
        scales.y.range = (u, lo, hi) => {
          const high = Math.max(hi, top * 1.1);
          return spec.y.log ? [lo, high] : [Math.min(lo, 0), high];
        };
      }
    }
    if (spec.stacked || spec.series.some((s) => s.style === "bars")) {
      if (!scales.y.range && !spec.y.log) scales.y.range = (u, lo, hi) => [Math.min(0, lo), hi * 1.05 || 1];
    }
    const xs = spec.data[0];
    if (!spec.x.categories && !spec.x.time && !spec.x.log && xs.length && xs.every((v) => v === null || Number.isInteger(v))) {
      axes[0].incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 100000, 1000000];
      if (spec.stacked || spec.series.some((s) => s.style === "bars")) {
        // Whole bars at both ends: half a step of room on each side.
        const lo = Math.min(...xs), hi = Math.max(...xs);
        const pad = xs.length > 1 ? (hi - lo) / (xs.length - 1) / 2 : 0.5;
        scales.x.range = () => [lo - pad, hi + pad];
        scales.x.auto = false;
      }
    }
    if (spec.x.format === "percentile") {
      // Ticks at the nines (p0, p50, p90, p99, ...) rather than uPlot's log ticks.
      axes[0].splits = (u) => [1, 2, 10, 100, 1000, 10000, 100000].filter((v) => v >= u.scales.x.min && v <= u.scales.x.max * 1.0001);
    }
    if (spec.x.categories) {
      const n = spec.x.categories.length;
      axes[0].splits = () => spec.x.categories.map((c, i) => i);
      scales.x.range = () => [-0.5, n - 0.5];
      scales.x.auto = false;
    }
    const opts = {
      width: plotWidth(container),
      height: spec.height || 300,
      series: useSeries,
      scales,
      axes,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      plugins: [overlayPlugin(spec)],
    };
    const bands = [];
    for (const b of spec.bands || []) bands.push({ series: [b.upper + 1, b.lower + 1], fill: (PALETTE[b.lower % PALETTE.length]) + "22" });
    if (bands.length && !spec.stacked) opts.bands = bands;
    const plot = new uPlot(opts, useData, container);
    window.addEventListener("resize", () => plot.setSize({ width: plotWidth(container), height: opts.height }));
    return plot;
  }

  function drawHeatmap(spec, container) {
    const rows = spec.rows.length, cols = spec.cols.length;
    const labelWidth = 90, legendHeight = 34;
    const width = plotWidth(container);
    const cellW = Math.max(1, (width - labelWidth - 10) / Math.max(cols, 1));
    const cellH = rows > 80 ? Math.max(1, 400 / rows) : 14;
    const height = Math.ceil(rows * cellH) + legendHeight + 20;
    const canvas = el("canvas", { width: width * devicePixelRatio, height: height * devicePixelRatio,
      style: "width:" + width + "px;height:" + height + "px", role: "img",
      "aria-label": spec.title });
    container.append(canvas);
    const ctx = canvas.getContext("2d");
    ctx.scale(devicePixelRatio, devicePixelRatio);
    let max = 0;
    for (const row of spec.values) for (const v of row) if (v !== null && v > max) max = v;
    const color = (v) => {
      if (v === null) return "#eeeeee";
      const t = max > 0 ? Math.sqrt(v / max) : 0;  // sqrt: small waits stay visible next to a big one
      const r = Math.round(255 - t * (255 - 198)), g = Math.round(255 - t * (255 - 40)),
        b = Math.round(255 - t * (255 - 40));
      return "rgb(" + r + "," + g + "," + b + ")";
    };
    ctx.font = "11px sans-serif";
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        ctx.fillStyle = color(spec.values[r][c]);
        ctx.fillRect(labelWidth + c * cellW, r * cellH, Math.ceil(cellW), Math.ceil(cellH));
      }
      if (cellH >= 10 || r % Math.ceil(12 / cellH) === 0) {
        ctx.fillStyle = "#333";
        ctx.fillText(spec.rows[r], 2, r * cellH + Math.min(cellH, 12) - 2);
      }
    }
    const y0 = rows * cellH + 8;
    ctx.fillStyle = "#333";
    ctx.fillText(axisTitle(spec.x) + ": " + spec.cols[0] + " .. " + spec.cols[cols - 1], labelWidth, y0 + 10);
    for (let i = 0; i <= 100; i++) {
      ctx.fillStyle = color((i / 100) * (i / 100) * max);
      ctx.fillRect(labelWidth + i * 2, y0 + 16, 2, 10);
    }
    ctx.fillStyle = "#333";
    ctx.fillText("0 .. " + fmt(max) + " " + (spec.unit || ""), labelWidth + 210, y0 + 25);
  }

  function renderBlock(block, into) {
    if (block.type === "text") {
      into.append(el("p", { class: "note " + (block.tone || "") }, block.text));
      return 0;
    }
    if (block.type === "stats") {
      into.append(el("div", { class: "stats" }, ...block.items.map((it) =>
        el("div", { class: "stat " + (it.tone || "") }, el("div", { class: "value" }, fmt(it.value)),
          el("div", { class: "label" }, it.label)))));
      return 0;
    }
    if (block.type === "table") {
      const wrap = el("div", { class: "block" }, el("h3", {}, block.title));
      if (block.note) wrap.append(el("p", { class: "note" }, block.note));
      const LONG = 25;
      if (block.rows.length > LONG) {
        wrap.append(table(block.columns, block.rows.slice(0, LONG)));
        wrap.append(numbersTable(block.columns, () => block.rows.slice(LONG),
          null, "the other " + (block.rows.length - LONG) + " rows"));
      } else {
        wrap.append(table(block.columns, block.rows));
      }
      into.append(wrap);
      return 0;
    }
    const wrap = el("figure", { class: "block" }, el("h3", {}, block.title));
    if (block.note) wrap.append(el("p", { class: "note" }, block.note));
    const holder = el("div", { class: "plot" });
    wrap.append(holder);
    into.append(wrap);
    if (block.type === "plot") {
      drawPlot(block, holder);
      const columns = [axisTitle(block.x), ...block.series.map((s) => s.label + (s.unit ? " (" + s.unit + ")" : ""))];
      const note = block.decimated ? "min/max decimated from " + block.decimated.from + " to " +
        block.decimated.to + " points per series: every spike is kept" : null;
      wrap.append(numbersTable(columns, () => block.data[0].map((x, k) =>
        [block.x.categories || block.x.format ? fmtAxis(block.x, x) : x, ...block.data.slice(1).map((col) => col[k])]), note));
      return 1;
    }
    if (block.type === "heatmap") {
      drawHeatmap(block, holder);
      wrap.append(numbersTable(["row", ...block.cols], () => block.values.map((row, r) => [block.rows[r], ...row])));
      return 1;
    }
    throw new Error("unknown block type " + block.type);
  }

  function render() {
    const report = JSON.parse(document.getElementById("titan-report-data").textContent);
    const main = document.getElementById("report");
    main.append(el("h1", {}, report.title));
    main.append(el("p", { class: "meta" }, "written by " + report.generator + " at " + report.created));
    if (report.sections.length > 1) {
      main.append(el("nav", {}, el("ol", {}, ...report.sections.map((s, i) =>
        el("li", {}, Object.assign(el("a", { href: "#s" + i }, s.title)))))));
    }
    let drawn = 0;
    report.sections.forEach((section, i) => {
      const node = el("section", { id: "s" + i }, el("h2", {}, section.title));
      if (section.source) node.append(el("p", { class: "meta" }, section.source));
      main.append(node);
      for (const block of section.blocks) drawn += renderBlock(block, node);
    });
    root.dataset.titanPlots = String(drawn);
    root.dataset.titanRenderMs = (performance.now() - started).toFixed(1);
    root.dataset.titanReady = "1";
  }

  try {
    render();
  } catch (e) {
    recordError(e && e.stack ? e.stack : e);
    root.dataset.titanReady = "1";
  }
})();
