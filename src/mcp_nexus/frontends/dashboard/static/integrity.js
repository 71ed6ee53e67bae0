// Tool integrity panel (docs/INTEGRITY.md): held and flagged tools on the Servers page, each with
// what changed (pinned against current, field by field), what the scan found and an Approve button.
// Self-contained: reads GET /api/integrity, approves with POST /api/integrity/approve.
(() => {
  "use strict";
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) node.append(child);
    return node;
  };
  const pretty = (value) => (value === undefined ? "(absent)" : JSON.stringify(value, null, 2));
  const field = (definition, path) => {
    // "inputSchema.properties.x" -> definition.inputSchema.properties.x
    let value = definition;
    for (const part of path.split(".")) value = value == null ? undefined : value[part];
    return value;
  };
  async function request(method, path, body) {
    const response = await fetch(path, {
      method, credentials: "same-origin",
      headers: body ? { "content-type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }
  function diffView(hold) {
    const rows = el("div", { class: "integrity-diff" });
    const fields = hold.changed.length ? hold.changed : ["description"];
    for (const name of fields) {
      const before = hold.pinned ? pretty(field(hold.pinned, name)) : "(never approved)";
      rows.append(el("h3", {}, name),
        el("div", { class: "integrity-sides" },
          el("div", {}, el("div", { class: "muted" }, "approved"), el("pre", { class: "was" }, before)),
          el("div", {}, el("div", { class: "muted" }, "now"), el("pre", { class: "now" }, pretty(field(hold.current, name))))));
    }
    return rows;
  }
  function render(panel, data) {
    panel.replaceChildren();
    panel.hidden = data.pending.length === 0;
    if (panel.hidden) return;
    panel.append(el("h2", {}, `Tool integrity: ${data.quarantined} held, ${data.pending.length - data.quarantined} flagged`));
    for (const hold of data.pending) {
      const name = `${hold.server}.${hold.tool}`;
      const approve = el("button", { type: "button", class: "primary" }, "Approve");
      approve.addEventListener("click", async () => {
        approve.disabled = true;
        try { await request("POST", "/api/integrity/approve", { name }); await refresh(); }
        catch (e) { approve.disabled = false; approve.title = e.message; }
      });
      const findings = el("ul", {});
      for (const f of hold.findings) findings.append(el("li", {}, `${f.kind} in ${f.where}: ${f.excerpt}`));
      const details = el("details", {}, el("summary", {}, "What changed"), diffView(hold));
      panel.append(el("div", { class: "integrity-hold alert" + (hold.quarantined ? " error" : "") },
        el("div", { class: "bar" }, el("strong", {}, name), el("span", { class: "muted" }, hold.quarantined ? " quarantined" : " flagged (listed)"),
          el("span", { class: "grow" }), approve),
        el("p", {}, hold.what), findings, details));
    }
  }
  async function refresh() {
    const panel = document.getElementById("integrity-panel");
    if (!panel) return;
    try { render(panel, await request("GET", "/api/integrity")); } catch (e) { /* the page shows the outage */ }
  }
  document.addEventListener("DOMContentLoaded", () => { refresh(); setInterval(refresh, 5000); });
})();
