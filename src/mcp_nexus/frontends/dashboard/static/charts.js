/* A tiny line chart in plain SVG: enough for the Metrics page, no library, no network. */
"use strict";
const NexusCharts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f6feb", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4", "#57606a"];
  function el(name, attrs) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }
  function fmt(v) {
    if (v >= 1000) return (v / 1000).toFixed(1) + "k";
    if (v >= 10) return v.toFixed(0);
    if (v >= 1) return v.toFixed(1);
    return v.toFixed(2);
  }
  /* series: [{name, values: [number|null]}], times: [unix seconds] */
  function line(container, times, series) {
    container.textContent = "";
    const W = Math.max(320, container.clientWidth || 520), H = 180, L = 38, R = 8, T = 8, B = 20;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
    let max = 0;
    for (const s of series) for (const v of s.values) if (v != null && v > max) max = v;
    if (max <= 0) max = 1;
    const n = Math.max(times.length, 2);
    const x = (i) => L + (i * (W - L - R)) / (n - 1);
    const y = (v) => T + (H - T - B) * (1 - v / max);
    for (const f of [0, 0.5, 1]) {
      svg.appendChild(el("line", { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), class: "axis" }));
      const label = el("text", { x: L - 4, y: y(max * f) + 3, "text-anchor": "end" });
      label.textContent = fmt(max * f);
      svg.appendChild(label);
    }
    if (times.length) {
      const first = el("text", { x: L, y: H - 4 });
      first.textContent = new Date(times[0] * 1000).toLocaleTimeString();
      const last = el("text", { x: W - R, y: H - 4, "text-anchor": "end" });
      last.textContent = new Date(times[times.length - 1] * 1000).toLocaleTimeString();
      svg.append(first, last);
    }
    series.forEach((s, k) => {
      let d = "";
      s.values.forEach((v, i) => {
        if (v == null) return;
        d += (d && s.values[i - 1] != null ? "L" : "M") + x(i).toFixed(1) + " " + y(v).toFixed(1);
      });
      if (d) svg.appendChild(el("path", { d, fill: "none", stroke: COLORS[k % COLORS.length], "stroke-width": 1.8 }));
      s.values.forEach((v, i) => {
        if (v != null) svg.appendChild(el("circle", { cx: x(i), cy: y(v), r: 2.2, fill: COLORS[k % COLORS.length] }));
      });
    });
    container.appendChild(svg);
    const legend = document.createElement("div");
    legend.className = "legend";
    series.forEach((s, k) => {
      const item = document.createElement("span");
      item.style.setProperty("--c", COLORS[k % COLORS.length]);
      item.textContent = s.name;
      legend.appendChild(item);
    });
    if (!series.length) legend.textContent = "no calls yet";
    container.appendChild(legend);
  }
  return { line };
})();
