// cep live view: polls /api/state and draws the run as SVG, with no library.
//
// Every value that comes from the run (keys, field values, rule names, file names,
// dead-letter reasons) is written with textContent or as an SVG attribute value, never
// parsed as markup: a key such as <img src=x onerror=...> shows as text.
"use strict";

(() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const POLL_MS = 1000;
  const MAX_POINTS = 20000; // figures the page keeps (the server keeps fewer; older on demand)
  const COLORS = ["#2663c9", "#e8710a", "#1e8e3e", "#d01884", "#9334e6", "#12a4af",
                  "#b06000", "#5f6368", "#c5221f", "#3d5afe"];

  const ENGINE_PARTS = ["restore", "process", "save", "handoff"]; // points.ENGINE_PARTS

  let points = []; // per-batch figures, oldest first
  let last = null; // the latest snapshot
  let lastBatch = null;

  // ---------------------------------------------------------------- elements

  function html(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function byId(id) { return document.getElementById(id); }

  // ---------------------------------------------------------------- numbers

  const integer = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });
  const decimal = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });

  function num(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    if (digits) return new Intl.NumberFormat("en", { maximumFractionDigits: digits }).format(value);
    return Math.abs(value) >= 100 || Number.isInteger(value) ? integer.format(value) : decimal.format(value);
  }

  function short(value) {
    if (value === null || value === undefined) return "–";
    const abs = Math.abs(value);
    if (abs >= 1e9) return decimal.format(value / 1e9) + "G";
    if (abs >= 1e6) return decimal.format(value / 1e6) + "M";
    if (abs >= 1e4) return decimal.format(value / 1e3) + "k";
    return num(value);
  }

  function bytes(value) {
    if (value === null || value === undefined) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let v = value, i = 0;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i += 1; }
    return `${i ? decimal.format(v) : integer.format(v)} ${units[i]}`;
  }

  function seconds(value) {
    if (value === null || value === undefined) return "–";
    if (value < 1) return `${integer.format(value * 1000)} ms`;
    if (value < 120) return `${decimal.format(value)} s`;
    if (value < 7200) return `${decimal.format(value / 60)} min`;
    return `${decimal.format(value / 3600)} h`;
  }

  function ticks(lo, hi, count, integer) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = integer ? Math.max(1, (hi - lo) / count) : (hi - lo) / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((f) => f * power).find((s) => s >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return { step, values: out, hi: Math.max(hi, out[out.length - 1] || hi) };
  }

  // ---------------------------------------------------------------- charts

  function frame(node) {
    const box = node.viewBox.baseVal;
    return { width: box.width, height: box.height, left: 58, right: 14, top: 26, bottom: 32 };
  }

  function axes(node, f, xs, ys, xLabel, yFormat) {
    const g = svg("g");
    const plotW = f.width - f.left - f.right, plotH = f.height - f.top - f.bottom;
    const x = (v) => f.left + (xs.hi === xs.lo ? plotW / 2 : (v - xs.lo) / (xs.hi - xs.lo) * plotW);
    const y = (v) => f.top + plotH - (v - ys.lo) / (ys.hi - ys.lo) * plotH;
    for (const v of ys.ticks) {
      g.append(svg("line", { class: "grid-line", x1: f.left, x2: f.width - f.right, y1: y(v), y2: y(v) }));
      g.append(svg("text", { x: f.left - 6, y: y(v) + 4, "text-anchor": "end" }, (yFormat || short)(v)));
    }
    for (const v of xs.ticks) {
      g.append(svg("text", { x: x(v), y: f.height - f.bottom + 15, "text-anchor": "middle" }, short(v)));
    }
    g.append(svg("line", { class: "axis", x1: f.left, x2: f.width - f.right, y1: y(ys.lo), y2: y(ys.lo) }));
    g.append(svg("line", { class: "axis", x1: f.left, x2: f.left, y1: f.top, y2: f.top + plotH }));
    g.append(svg("text", { x: f.width - f.right, y: f.height - 4, "text-anchor": "end" }, xLabel));
    node.append(g);
    return { x, y };
  }

  function legend(node, f, entries) {
    const g = svg("g", { class: "legend" });
    let at = f.left;
    for (const { name, color } of entries) {
      g.append(svg("rect", { x: at, y: 6, width: 10, height: 10, fill: color, rx: 2 }));
      const label = svg("text", { x: at + 14, y: 15 }, name);
      g.append(label);
      at += 24 + 7 * String(name).length;
    }
    node.append(g);
  }

  function empty(node, text) {
    const f = frame(node);
    node.append(svg("text", { class: "empty", x: f.width / 2, y: f.height / 2, "text-anchor": "middle" }, text));
  }

  function range(values, floorZero) {
    const finite = values.filter((v) => v !== null && v !== undefined && Number.isFinite(v));
    if (!finite.length) return null;
    let lo = Math.min(...finite), hi = Math.max(...finite);
    if (floorZero) lo = Math.min(0, lo);
    return { lo, hi };
  }

  // series: [{name, color, values: [[x, y], ...]}]; options: xLabel, hline {y, label},
  // marks [{x, label, title}]
  function lineChart(node, series, options) {
    node.replaceChildren();
    const all = series.flatMap((s) => s.values);
    node.dataset.points = String(all.length);
    if (!all.length) { empty(node, options.empty || "waiting for the first batch"); return; }
    const f = frame(node);
    const xr = range(all.map((p) => p[0]));
    const yr = range([...all.map((p) => p[1]), options.hline ? options.hline.y * 1.15 : null], true);
    const yt = ticks(yr.lo, yr.hi * 1.05 || 1, 4);
    const xt = ticks(xr.lo, xr.hi, 6, options.integerX);
    const xs = { lo: xr.lo, hi: xr.hi, ticks: xt.values.filter((v) => v >= xr.lo && v <= xr.hi) };
    const ys = { lo: yr.lo, hi: yt.hi, ticks: yt.values };
    const { x, y } = axes(node, f, xs, ys, options.xLabel, options.yFormat);
    if (options.hline) {
      const hy = y(options.hline.y);
      node.append(svg("line", { class: "threshold", x1: f.left, x2: f.width - f.right, y1: hy, y2: hy }));
      node.append(svg("text", { class: "threshold-label", x: f.width - f.right - 4, y: hy - 4, "text-anchor": "end" },
                      options.hline.label));
    }
    let labelledUpTo = -Infinity; // a label only where the last one has ended
    for (const mark of options.marks || []) {
      const mx = x(mark.x);
      const g = svg("g", { class: mark.cls || "move" });
      g.append(svg("line", { class: "mark", x1: mx, x2: mx, y1: f.top, y2: f.height - f.bottom }));
      g.append(svg("path", { class: "mark-head", d: `M${mx - 5},${f.top} L${mx + 5},${f.top} L${mx},${f.top + 7} Z` }));
      const width = 8 + 7 * mark.label.length;
      const leftward = mx + width > f.width - f.right; // near the right edge: label to the left
      if (leftward ? mx - width > labelledUpTo : mx > labelledUpTo) {
        g.append(svg("text", { class: "mark-label", x: leftward ? mx - 4 : mx + 4, y: f.top + 18,
                               "text-anchor": leftward ? "end" : "start" }, mark.label));
        labelledUpTo = leftward ? mx : mx + width;
      }
      g.append(svg("title", {}, mark.title));
      node.append(g);
    }
    for (const s of series) {
      const pts = s.values.filter((p) => p[1] !== null && p[1] !== undefined);
      if (pts.length === 1) {
        node.append(svg("circle", { cx: x(pts[0][0]), cy: y(pts[0][1]), r: 3, fill: s.color }));
      }
      const line = svg("polyline", { class: "series", stroke: s.color,
                                     points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ") });
      line.append(svg("title", {}, s.name));
      node.append(line);
    }
    legend(node, f, series.map((s) => ({ name: s.name, color: s.color })));
  }

  // columns: [{name, color, values: [...]}] stacked per x in xs
  function stackedBars(node, xs, columns, options) {
    node.replaceChildren();
    node.dataset.points = String(xs.length);
    if (!xs.length) { empty(node, "waiting for the first batch"); return; }
    const f = frame(node);
    const totals = xs.map((_, i) => columns.reduce((sum, c) => sum + (c.values[i] || 0), 0));
    const yt = ticks(0, Math.max(...totals, 1e-9) * 1.05, 4);
    const xr = { lo: xs[0] - 0.5, hi: xs[xs.length - 1] + 0.5 };
    const xt = ticks(xs[0], xs[xs.length - 1], 6, true);
    const { x, y } = axes(node, f, { ...xr, ticks: xt.values.filter((v) => v >= xs[0] && v <= xs[xs.length - 1] && Number.isInteger(v)) },
                          { lo: 0, hi: yt.hi, ticks: yt.values }, options.xLabel, options.yFormat);
    const width = Math.max(1, (x(xr.lo + 1) - x(xr.lo)) * 0.8);
    xs.forEach((xv, i) => {
      let base = 0;
      for (const c of columns) {
        const v = c.values[i] || 0;
        if (v <= 0) continue;
        const rect = svg("rect", { x: x(xv) - width / 2, y: y(base + v), width, height: Math.max(0.5, y(base) - y(base + v)), fill: c.color });
        rect.append(svg("title", {}, `${options.xName || "batch"} ${xv}: ${c.name} ${options.valueText ? options.valueText(v) : num(v)}`));
        node.append(rect);
        base += v;
      }
    });
    legend(node, f, columns.map((c) => ({ name: c.name, color: c.color })));
  }

  // rows: [{label, value, text, color}] as horizontal bars
  function horizontalBars(node, rows) {
    node.replaceChildren();
    node.dataset.points = String(rows.length);
    if (!rows.length) { empty(node, "waiting for the first batch"); return; }
    const f = frame(node);
    const max = Math.max(...rows.map((r) => r.value), 1);
    const left = 78, right = 210;
    const band = (f.height - 16) / rows.length;
    const barH = Math.min(26, band * 0.7);
    rows.forEach((r, i) => {
      const top = 8 + i * band + (band - barH) / 2;
      const w = Math.max(1, (f.width - left - right) * r.value / max);
      node.append(svg("text", { x: left - 8, y: top + barH / 2 + 4, "text-anchor": "end" }, r.label));
      const rect = svg("rect", { x: left, y: top, width: w, height: barH, fill: r.color, rx: 2, "data-value": r.value });
      rect.append(svg("title", {}, `${r.label}: ${r.text}`));
      node.append(rect);
      node.append(svg("text", { class: "bar-value", x: left + w + 6, y: top + barH / 2 + 4 }, r.text));
    });
  }

  // ---------------------------------------------------------------- tables

  function table(node, head, rows, numeric) {
    node.replaceChildren();
    if (head) {
      const tr = html("tr");
      head.forEach((h, i) => tr.append(html("th", numeric && numeric[i] ? { class: "num" } : {}, h)));
      const thead = html("thead");
      thead.append(tr);
      node.append(thead);
    }
    const body = html("tbody");
    for (const row of rows) {
      const tr = html("tr");
      row.forEach((cell, i) => tr.append(html("td", numeric && numeric[i] ? { class: "num" } : {}, cell)));
      body.append(tr);
    }
    node.append(body);
  }

  function caption(node, text) {
    node.replaceChildren(html("caption", {}, text));
  }

  // ---------------------------------------------------------------- sections

  function renderStatus(snap) {
    const node = byId("status");
    const run = snap.run || {};
    const parts = [];
    if (snap.last_batch === null || snap.last_batch === undefined) {
      parts.push(run.kind === "starting" ? "the run is starting" : "no batch committed yet");
    } else {
      parts.push(`batch ${snap.last_batch}`);
      if (snap.last_wall) parts.push(`committed ${seconds(Math.max(0, Date.now() / 1000 - snap.last_wall))} ago`);
    }
    if (run.path) parts.push(`${run.kind} ${run.path}`);
    node.textContent = parts.join(" · ");
    const age = snap.last_wall ? Date.now() / 1000 - snap.last_wall : 0;
    node.className = `status ${age > 60 ? "stale" : "live"}`;
  }

  function kpi(label, value, id) {
    const box = html("div", { class: "kpi", id });
    box.append(html("div", { class: "label" }, label), html("div", { class: "value" }, value));
    return box;
  }

  function renderKpis(snap) {
    const t = snap.totals;
    const lastPoint = points[points.length - 1] || {};
    const elapsed = snap.started && snap.last_wall ? snap.last_wall - snap.started : null;
    byId("kpis").replaceChildren(
      kpi("events in", num(t.events_in), "kpi-events-in"),
      kpi("events/s since the first batch", elapsed ? num(t.events_in / elapsed) : "–", "kpi-rate"),
      kpi("complex events", num(t.events_out), "kpi-events-out"),
      kpi("dead letters", num(t.dead_lettered), "kpi-dead"),
      kpi("load RSTD (last batch)", lastPoint.rstd === undefined || lastPoint.rstd === null ? "–" : `${num(lastPoint.rstd, 1)} %`, "kpi-rstd"),
      kpi("keys handed over", num(t.exported_keys), "kpi-moved"),
      kpi("batches", num(snap.batches), "kpi-batches"),
    );
  }

  // where the rule set changed (cep deploy, cep undeploy): a mark at each such batch
  function ruleMarks(xOf) {
    return points.filter((p) => p.rules_changed).map((p) => ({
      x: xOf(p), cls: "rules-change", label: `rules v${p.rules_version}`,
      title: `batch ${p.batch}: the rules changed, rule set version ${p.rules_version} from here`,
    }));
  }

  // where the engine count changed (cep scale, --engines auto): a mark at the batch that
  // first ran the new count, and one at each --engines auto decision with its reason
  function scaleMarks(xOf) {
    const marks = [];
    points.forEach((p, i) => {
      const before = i > 0 ? points[i - 1].engines : null;
      if (before && p.engines && p.engines !== before) {
        marks.push({ x: xOf(p), cls: "scale-change", label: `${p.engines} engines`,
                     title: `batch ${p.batch}: ${before} -> ${p.engines} engines from here` });
      }
      if (p.autoscale === "out" || p.autoscale === "in") {
        marks.push({ x: xOf(p), cls: "scale-decision", label: `auto ${p.autoscale} → ${p.autoscale_target}`,
                     title: `batch ${p.batch}: --engines auto asks for ${p.autoscale_target} engines: ${p.autoscale_reason}` });
      }
    });
    return marks;
  }

  function renderThroughput(snap) {
    const start = snap.started;
    const xOf = (p) => (start && p.wall ? p.wall - start : p.batch);
    lineChart(byId("chart-throughput"), [
      { name: "events in /s", color: COLORS[0], values: points.map((p) => [xOf(p), p.in_rate]) },
      { name: "complex events out /s", color: COLORS[1], values: points.map((p) => [xOf(p), p.out_rate]) },
    ], { xLabel: start ? "seconds since the first batch" : "batch",
         marks: [...ruleMarks(xOf), ...scaleMarks(xOf)] });
  }

  function lastEngines(snap) {
    const p = points[points.length - 1];
    return p && p.engines ? p.engines : "?";
  }

  function engineCount(snap) {
    return Math.max(snap.settings.engines || 0, snap.engines.rows.length,
                    ...points.map((p) => p.rows.length));
  }

  function renderEngines(snap) {
    const n = engineCount(snap);
    const series = [];
    for (let e = 0; e < n; e += 1) {
      series.push({ name: `engine ${e}`, color: COLORS[e % COLORS.length],
                    values: points.map((p) => [p.batch, p.rows[e] ?? null]) });
    }
    lineChart(byId("chart-engines"), series, { xLabel: "batch", integerX: true,
                                               marks: scaleMarks((p) => p.batch) });
    const rows = snap.engines.rows.map((events, e) => ({
      label: `engine ${e}`, value: events, color: COLORS[e % COLORS.length],
      text: `${short(events)} events · ${seconds(snap.engines.busy_s[e])} busy`,
    }));
    horizontalBars(byId("chart-engine-totals"), rows);
  }

  function renderBalance(snap) {
    const theta = snap.settings.threshold;
    const moves = points.filter((p) => p.handed_over > 0);
    lineChart(byId("chart-rstd"), [
      { name: "RSTD %", color: COLORS[0], values: points.map((p) => [p.batch, p.rstd]) },
    ], {
      xLabel: "batch",
      integerX: true,
      yFormat: (v) => `${short(v)}%`,
      hline: theta !== undefined && theta !== null ? { y: theta, label: `θ = ${num(theta, 1)}%` } : null,
      marks: [...ruleMarks((p) => p.batch), ...scaleMarks((p) => p.batch), ...moves.map((p) => ({
        x: p.batch, label: `${short(p.handed_over)} ${p.handed_over === 1 ? "key" : "keys"}`,
        title: `batch ${p.batch}: ${num(p.handed_over)} keys handed over (${bytes(p.handover_bytes)}), ` +
               `hand-over ${seconds(p.handover_s)} of engine time`,
      }))],
    });
    const node = byId("moves");
    if (!snap.moves.length) {
      caption(node, snap.settings.strategy && !["kg", "pkg"].includes(snap.settings.strategy)
        ? "no keys moved yet" : `strategy ${snap.settings.strategy || "?"} does not move keys`);
      return;
    }
    table(node, ["batch", "decided to move", "handed over", "state", "imported", "hand-over time"],
          snap.moves.slice().reverse().map((m) => [m.batch, num(m.decided), num(m.handed_over),
                                                      bytes(m.handover_bytes), num(m.imported), seconds(m.handover_s)]),
          [false, true, true, true, true, true]);
  }

  function renderRules(snap) {
    const lastPoint = points[points.length - 1] || { outputs: {} };
    const rules = snap.rules || { version: 0, running: [] };
    const running = Object.fromEntries(rules.running.map((r) => [r.rule, r]));
    const names = [...new Set([...rules.running.map((r) => r.rule), ...(snap.settings.rules || []),
                               ...Object.keys(snap.per_rule)])];
    const since = (r) => (running[r] ? `v${running[r].version} · batch ${running[r].batch}` +
                          (running[r].started === "start" ? "" : ` (${running[r].started})`)
                          : (rules.running.length ? "removed" : ""));
    table(byId("rules"), ["rule", "version · since", "last batch", "total"],
          names.map((r) => [r, since(r), num(lastPoint.outputs[r] || 0), num(snap.per_rule[r] || 0)]),
          [false, false, true, true]);
    byId("rules-version").textContent = rules.version ? `rule set version ${rules.version}` : "";
    const box = byId("latest-events");
    box.replaceChildren();
    for (const [rule, events] of Object.entries(snap.latest_events)) {
      box.append(html("h3", {}, `latest of ${rule}`));
      for (const e of events.slice().reverse()) {
        box.append(html("pre", { title: `batch ${e.batch}` }, e.line));
      }
    }
  }

  function renderDead(snap) {
    const kinds = Object.entries(snap.dead_kinds);
    if (!kinds.length && !snap.totals.dead_lettered) {
      caption(byId("dead-kinds"), "none so far");
    } else {
      table(byId("dead-kinds"), ["kind", "records"],
            kinds.sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, num(n)]), [false, true]);
    }
    const box = byId("dead-latest");
    box.replaceChildren();
    if (snap.dead_latest.length) box.append(html("h3", {}, "latest reasons"));
    for (const d of snap.dead_latest.slice().reverse()) {
      const item = html("div", { class: "reason" });
      item.append(html("div", { class: "where" }, `batch ${d.batch} · ${d.kind} · ${d.source}:${d.offset}`));
      item.append(html("div", {}, d.reason));
      if (d.record) item.append(html("pre", {}, d.record));
      box.append(item);
    }
  }

  function renderInputs(snap) {
    const sources = (snap.input && snap.input.sources) || [];
    const node = byId("inputs");
    if (!sources.length) {
      caption(node, "no input figures yet");
      return;
    }
    // arrived: records past the last listing when the batch committed (a followed
    // file's growth, a Kafka partition's end past the plan); with behind, the lag
    // --engines auto reads
    table(node, ["input", "source", "read", "behind", "arrived since listing"], sources.map((s) => {
      const amount = (v, records) => (s.unit === "bytes" ? `${bytes(v)} (≈${short(records)} records)`
                                     : `${num(v)} ${s.unit}`);
      const arrived = s.arrived_records == null ? "–" : `${short(s.arrived_records)} records`;
      return [s.stream, s.source, amount(s.read, s.read_records), amount(s.behind, s.behind_records),
              arrived];
    }), [false, false, true, true, true]);
  }

  function renderBatchTime() {
    const shown = points.slice(-200);
    // the engines' task time split as the state path splits it, the rest as "engines, other"
    const part = (p, name) => (p.engine_parts && p.engine_parts[name]) || 0;
    const split = (p) => ENGINE_PARTS.reduce((sum, name) => sum + part(p, name), 0);
    stackedBars(byId("chart-batch-time"), shown.map((p) => p.batch), [
      { name: "read", color: COLORS[2], values: shown.map((p) => p.read_s || 0) },
      ...ENGINE_PARTS.map((name, i) => ({ name, color: COLORS[[0, 5, 4, 3][i]],
                                          values: shown.map((p) => part(p, name)) })),
      { name: "engines, other", color: COLORS[7],
        values: shown.map((p) => Math.max((p.engines_s || 0) - split(p), 0)) },
      { name: "deliver", color: COLORS[1], values: shown.map((p) => p.deliver_s || 0) },
    ], { xLabel: "batch", yFormat: (v) => `${short(v)}s`, valueText: seconds });
    const p = points[points.length - 1];
    byId("batch-time-last").textContent = p
      ? `batch ${p.batch}: ${seconds(p.duration)} from the previous commit; read ${seconds(p.read_s)}, ` +
        `engines ${seconds(p.engines_s)} (task time: ` +
        ENGINE_PARTS.map((name) => `${name} ${seconds(part(p, name))}`).join(", ") +
        `), deliver ${seconds(p.deliver_s)}`
      : "";
  }

  function renderSettings(snap) {
    const s = snap.settings, run = snap.run || {}, manifest = run.manifest || {};
    const inputs = s.inputs || manifest.inputs || {};
    const rows = [
      ["rule file", s.rule_file], ["rules", (s.rules || []).join(", ")],
      ["strategy", s.strategy || manifest.strategy], ["θ (threshold)", s.threshold === undefined ? null : `${num(s.threshold, 2)}%`],
      ["engines", s.engines || manifest.engines], ["batch size", s.batch_size === undefined ? null : num(s.batch_size)],
      ["follow", s.follow === undefined ? null : (s.follow ? "yes" : "no")], ["master", s.master],
      ...Object.entries(inputs).map(([stream, src]) => [`input ${stream}`, src]),
      ["output", s.output], ["format", s.format], ["dead letters", s.dead_letter],
      ["metrics file", s.metrics_file], ["run id", s.run_id || manifest.run_id],
      [run.kind || "source", run.path],
    ];
    const balance = snap.balance || {};
    const auto = snap.autoscale || {};
    if (auto.bounds) {
      const last = auto.last || {};
      rows.push(["engines (auto)", `${auto.bounds[0]}–${auto.bounds[1]}, now ${lastEngines(snap)}`]);
      if (last.action) rows.push(["autoscale, last batch", `${last.action}: ${last.reason}`]);
    }
    if (balance.keys !== undefined) rows.push(["keys seen by the Balancer", num(balance.keys)]);
    if (balance.watermark !== undefined) {
      // microseconds of event time; far below any real time until an event has a timestamp
      rows.push(["watermark (event time)", balance.watermark > -4e18
        ? new Date(balance.watermark / 1000).toISOString() : "no timestamped event yet"]);
    }
    if (snap.totals.late_events) rows.push(["late events (below the watermark)", num(snap.totals.late_events)]);
    const p = points[points.length - 1] || {};
    if (p.keys_held !== undefined && p.keys_held !== null) rows.push(["keys held by the engines", num(p.keys_held)]);
    if (p.state_bytes !== undefined && p.state_bytes !== null) {
      rows.push(["state written, last batch", bytes(p.state_bytes)]);
    }
    const restored = snap.restored || {};
    const origins = ["resident", "caught_up", "rebuilt", "new"].filter((k) => restored[k]);
    if (origins.length) {
      rows.push(["engines' state came from", origins.map((k) => `${k.replace("_", " ")} ${num(restored[k])}`)
        .join(", ") + (restored.log_entries ? ` (${num(restored.log_entries)} log entries read)` : "")]);
    }
    const node = byId("settings");
    node.replaceChildren();
    for (const [name, value] of rows) {
      if (value === undefined || value === null || value === "") continue;
      const tr = html("tr");
      tr.append(html("th", {}, name), html("td", {}, String(value)));
      node.append(tr);
    }
  }

  function renderWindow() {
    const first = points[0];
    byId("window").textContent = first ? `showing batches ${first.batch}–${points[points.length - 1].batch}` : "";
    byId("older").disabled = !first || first.batch <= ((last && last.first_batch) || 0);
  }

  function render(snap) {
    document.title = snap.last_batch === null || snap.last_batch === undefined
      ? "cep · live view" : `cep · batch ${snap.last_batch}`;
    renderStatus(snap);
    renderKpis(snap);
    renderThroughput(snap);
    renderEngines(snap);
    renderBalance(snap);
    renderRules(snap);
    renderDead(snap);
    renderInputs(snap);
    renderBatchTime();
    renderSettings(snap);
    renderWindow();
  }

  // ---------------------------------------------------------------- data

  function merge(snap) {
    if (lastBatch !== null && (snap.last_batch === null || snap.last_batch < lastBatch)) {
      points = []; // the server started over (a rewritten metrics file): so does the page
      lastBatch = null;
    }
    const fresh = snap.points.filter((p) => lastBatch === null || p.batch > lastBatch);
    points = points.concat(fresh);
    if (points.length > MAX_POINTS) points = points.slice(points.length - MAX_POINTS);
    if (points.length) lastBatch = points[points.length - 1].batch;
    return fresh.length > 0;
  }

  async function poll() {
    try {
      const url = lastBatch === null ? "/api/state" : `/api/state?since=${lastBatch}`;
      const response = await fetch(url, { cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const snap = await response.json();
      const changed = merge(snap) || last === null;
      last = snap;
      if (changed) render(snap); else renderStatus(snap);
    } catch (err) {
      const node = byId("status");
      node.textContent = `cannot reach the live view's server (${err.message}); retrying`;
      node.className = "status down";
    }
    setTimeout(poll, document.hidden ? POLL_MS * 5 : POLL_MS);
  }

  async function loadOlder() {
    if (!points.length) return;
    const response = await fetch(`/api/history?before=${points[0].batch}&count=600`, { cache: "no-store" });
    if (!response.ok) return;
    const older = (await response.json()).points.filter((p) => p.batch < points[0].batch);
    points = older.concat(points);
    if (last) render(last);
  }

  document.addEventListener("DOMContentLoaded", () => {
    byId("older").addEventListener("click", loadOlder);
    poll();
  });
})();
