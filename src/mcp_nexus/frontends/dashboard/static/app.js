/* The Nexus dashboard: one page, seven views, live through server-sent events.
   Everything shown is built with textContent (never innerHTML): names and errors come from servers.
   A viewer (role from /api/dashboard) sees no action buttons; the admin API refuses their actions anyway. */
"use strict";
(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const state = { servers: new Map(), tools: [], calls: [], metrics: null, history: null, frontends: {}, control: false, viewer: null, role: "admin", mine: null };
  const MAX_CALLS = 500;

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c != null) node.append(c instanceof Node ? c : String(c));
    return node;
  }
  function toast(message, bad) {
    const item = h("div", { class: bad ? "bad" : "" }, message);
    $("#toast").appendChild(item);
    setTimeout(() => item.remove(), bad ? 7000 : 3500);
  }
  async function api(method, path, body) {
    const response = await fetch(path, {
      method, credentials: "same-origin",
      headers: body ? { "content-type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    if (response.status === 401) { location.href = "/login"; throw new Error("log in first"); }
    let data = null;
    try { data = await response.json(); } catch (e) { data = { error: response.statusText }; }
    if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { data, status: response.status });
    return data;
  }
  const ms = (s) => (s == null ? "-" : (s * 1000).toFixed(1));
  const uptime = (s) => {
    if (s == null) return "-";
    s = Math.floor(s);
    const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
    return hh ? `${hh}h${String(mm).padStart(2, "0")}m` : mm ? `${mm}m${String(ss).padStart(2, "0")}s` : `${ss}s`;
  };
  const mib = (b) => (b == null ? "-" : (b / 1048576).toFixed(1) + " MiB");

  // -- navigation -------------------------------------------------------------------------------
  const PAGES = ["servers", "tools", "calls", "metrics", "xiaozhi", "tasks", "audit"];
  function page() { const p = location.hash.slice(1); return PAGES.includes(p) ? p : "servers"; }
  function show() {
    const current = page();
    for (const p of PAGES) $("#page-" + p).hidden = p !== current;
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === current);
    document.title = `Nexus: ${current}`;
    render();
    if (current === "metrics") refreshHistory();
    if (current === "tasks") renderTasks();
    if (current === "audit") { loadAudit(false); verifyAudit(); }
  }
  window.addEventListener("hashchange", show);

  // -- servers ----------------------------------------------------------------------------------
  const canAct = () => state.role === "admin";
  function actionsFor(row) {
    const own = ownLoginFor(row);
    if (!canAct()) return own;
    const wanted = [];
    if (!row.enabled) wanted.push("enable");
    else {
      if (row.state === "NEEDS_AUTH") wanted.push("log in");  // an OAuth server waiting for its login
      if (["STOPPED", "ERROR", "CRASHED"].includes(row.state)) wanted.push("start");
      if (["READY", "DEGRADED", "CONNECTING", "ERROR", "CRASHED"].includes(row.state)) wanted.push("stop");
      wanted.push("restart", "disable");
    }
    return [...own, ...wanted.map((action) => h("button", {
      type: "button", "data-action": action === "log in" ? "login" : action, "data-server": row.name,
      onclick: () => (action === "log in" ? oauthLogin(row.name, "login") : serverAction(row.name, action)),
    }, action))];
  }
  // A per-user server (docs/OAUTH.md): this user's own login to it, offered to every role (it acts
  // only on the user's own credentials; the API lets a viewer do exactly this).
  function ownLoginFor(row) {
    const mine = state.mine && state.mine.get(row.name);
    if (!mine || mine.logged_in == null) return [];  // not a user, not per-user, or token exchange
    return [
      h("span", { class: "badge", "data-own-login": mine.logged_in ? "yes" : "no", text: mine.logged_in ? "you: logged in" : "you: no login" }),
      h("button", {
        type: "button", "data-action": mine.logged_in ? "logout-me" : "login-me", "data-server": row.name,
        onclick: () => (mine.logged_in ? ownLogout(row.name) : oauthLogin(row.name, "login/me")),
      }, mine.logged_in ? "log out as me" : "log in as me"),
    ];
  }
  async function loadMine() {
    const r = await api("GET", "/api/auth/me");
    state.mine = new Map(r.servers.map((s) => [s.server, s]));
    if (page() === "servers") renderServers();
    return state.mine;
  }
  // Until the other tab's login lands (no live event tells of a user's own login): then the row shows it.
  function awaitOwnLogin(name, tries = 120) {
    setTimeout(() => loadMine().then((mine) => {
      if (!(mine.get(name) || {}).logged_in && tries > 1) awaitOwnLogin(name, tries - 1);
    }).catch(() => {}), 1500);
  }
  async function ownLogout(name) {
    try {
      await api("DELETE", `/api/auth/${encodeURIComponent(name)}/login/me`);
      toast(`${name}: your login is forgotten`);
      await loadMine();
    } catch (e) { toast(`${name} log out: ${e.message}`, true); }
  }
  // Starts an OAuth login (docs/OAUTH.md: the server's, `login`, or the user's own, `login/me`) and
  // opens its authorization URL in a new tab; the authorization server sends that tab back to the
  // gateway's /oauth/callback, and the row turns READY through the live events (or shows the
  // user's login).
  async function oauthLogin(name, which) {
    const tab = window.open("", "_blank");  // opened within the click: a later open is blocked as a popup
    if (tab) tab.opener = null;  // the authorization server's page gets no handle on the dashboard
    try {
      const r = await api("POST", `/api/auth/${encodeURIComponent(name)}/${which}`);
      const url = r.authorization_url ? new URL(r.authorization_url) : null;
      if (url && !["https:", "http:"].includes(url.protocol)) throw new Error(`not a web address: ${url.protocol}`);
      if (!url) { if (tab) tab.close(); toast(`${name}: the stored login works`); return; }
      if (tab) tab.location.href = url.href; else location.href = url.href;
      toast(`${name}: finish the login in the new tab`);
      if (which === "login/me") awaitOwnLogin(name);
    } catch (e) { if (tab) tab.close(); toast(`${name} log in: ${e.message}`, true); }
  }
  async function serverAction(name, action) {
    try {
      const row = await api("POST", `/api/servers/${encodeURIComponent(name)}/${action}`);
      state.servers.set(row.name, { ...state.servers.get(row.name), ...row, _at: Date.now() });
      toast(`${name}: ${row.state}`);
      renderServers();
    } catch (e) { toast(`${name} ${action}: ${e.message}`, true); }
  }
  // Tools the gateway will not expose from this server (names arrive escaped; shown as text only).
  function refusedTools(row) {
    const refused = row.refused_tools || [];
    if (!refused.length) return [];
    return [h("details", { class: "refused", "data-refused": refused.length },
      h("summary", { text: `refused tools: ${refused.length}` }),
      ...refused.map((r) => h("div", {}, h("code", { text: r.tool }), " ", h("span", { text: r.reason }))))];
  }
  function renderServers() {
    const body = $("#servers-table tbody");
    body.textContent = "";
    for (const row of [...state.servers.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      body.appendChild(h("tr", { "data-server": row.name },
        h("td", {}, h("strong", { text: row.name }), row.display_name ? h("div", { class: "muted", text: row.display_name }) : null),
        h("td", {}, h("span", { class: "badge state " + row.state, "data-state": row.state, text: row.state })),
        h("td", { text: row.transport }),
        h("td", { class: "num", text: row.priority }),
        h("td", { class: "num", text: row.tools }),
        h("td", { class: "num", text: row.restarts ?? 0 }),
        h("td", { text: uptime(row.uptime == null ? null : row.uptime + (Date.now() - (row._at || Date.now())) / 1000) }),
        h("td", { class: "muted" }, row.last_error || "", ...refusedTools(row)),
        h("td", { class: "actions" }, ...actionsFor(row)),
      ));
    }
    const m = state.metrics ? state.metrics.gateway : null;
    const cards = $("#summary");
    cards.textContent = "";
    const rows = [...state.servers.values()];
    const items = [
      ["Servers running", `${rows.filter((r) => r.state === "READY" || r.state === "DEGRADED").length} / ${rows.length}`],
      ["Tools", state.tools.length],
      ["Processes", m ? m.processes : "-"],
      ["Gateway memory", m ? mib(m.rss_bytes) : "-"],
      ["Cache", m ? `${m.cache_entries} entries` : "-"],
      ["Uptime", m ? uptime(m.uptime) : "-"],
    ];
    for (const [label, value] of items) cards.appendChild(h("div", { class: "card" }, h("div", { class: "value", text: value }), h("div", { class: "label", text: label })));
  }
  $("#reload-config").addEventListener("click", async () => {
    try { const r = await api("POST", "/api/reload"); toast(`reloaded: ${r.summary}`); await load(); }
    catch (e) { toast(`reload: ${e.message}`, true); }
  });

  // -- tools ------------------------------------------------------------------------------------
  let selected = null;
  function renderTools() {
    const q = $("#tool-search").value.trim().toLowerCase();
    const body = $("#tools-table tbody");
    body.textContent = "";
    for (const t of state.tools) {
      const hay = [t.name, t.server, t.description, ...t.tags].join(" ").toLowerCase();
      if (q && !hay.includes(q)) continue;
      body.appendChild(h("tr", { "data-tool": t.name, class: selected === t.name ? "selected" : "", onclick: () => openTool(t.name) },
        h("td", {}, h("strong", { text: t.name }), h("div", { class: "muted", text: (t.description || "").split("\n")[0].slice(0, 140) })),
        h("td", { text: t.server + (t.fallbacks.length ? ` (+${t.fallbacks.join(", ")})` : "") }),
        h("td", {}, ...t.tags.map((tag) => h("span", { class: "chip " + tag, text: tag }))),
        h("td", { class: "num", text: t.cache_ttl ? `${t.cache_ttl} s` : "-" }),
        h("td", { text: t.rate_limit || "-" }),
      ));
    }
  }
  $("#tool-search").addEventListener("input", renderTools);

  // One property's schema as the form needs it: its non-null type, whether null is allowed, its
  // values. Optional[str] comes as {"type": ["string", "null"]} or {"anyOf": [{"type": "string"}, {"type": "null"}]}.
  function describe(schema) {
    const branches = [schema, ...(schema.anyOf || []), ...(schema.oneOf || [])];
    const types = branches.flatMap((b) => (Array.isArray(b.type) ? b.type : b.type ? [b.type] : []));
    const values = branches.find((b) => Array.isArray(b.enum));
    const enumValues = values ? values.enum.filter((v) => v !== null) : null;
    const nullable = types.includes("null") || (values ? values.enum.includes(null) : false);
    return {
      type: types.find((t) => t !== "null"), nullable, enum: enumValues,
      description: schema.description || branches.map((b) => b.description).find(Boolean),
    };
  }
  function fieldFor(name, schema, required) {
    const { type, nullable, enum: choices, description } = describe(schema);
    const id = "arg-" + name;
    const label = h("label", { for: id }, name + (required ? " *" : ""), " ",
      h("span", { class: "hint", text: [type + (nullable ? " or null" : ""), description].filter(Boolean).join(": ") }));
    let input;
    if (choices) {
      input = h("select", { id, name, "data-kind": "enum" }, ...(required && !nullable ? [] : [h("option", { value: "" }, "")]),
        ...choices.map((v) => h("option", { value: JSON.stringify(v) }, String(v))));
    } else if (type === "boolean") {
      input = h("input", { id, name, type: "checkbox", "data-kind": "boolean" });
    } else if (type === "integer" || type === "number") {
      input = h("input", { id, name, type: "number", step: type === "integer" ? "1" : "any", "data-kind": "number", required });
    } else if (type === "object" || type === "array") {
      input = h("textarea", { id, name, rows: 3, "data-kind": "json", placeholder: type === "array" ? "[ ]" : "{ }", required });
    } else {
      input = h("input", { id, name, type: "text", "data-kind": "string", required: required && !nullable });
    }
    // An empty field is left out of the arguments (or sent as null when the tool requires it and
    // allows null): never the text "null". A null default is such an empty field.
    if (nullable) input.dataset.nullable = "1";
    if (required && nullable) { input.required = false; input.placeholder = "empty: null"; }
    if (schema.default != null && input.type !== "checkbox") input.value = typeof schema.default === "string" ? schema.default : JSON.stringify(schema.default);
    if (schema.default === true && input.type === "checkbox") input.checked = true;
    return [label, input];
  }
  function openTool(name) {
    selected = name;
    const t = state.tools.find((x) => x.name === name);
    if (!t) return;
    renderTools();
    $("#try-panel").hidden = false;
    $("#try-name").textContent = t.name;
    $("#try-description").textContent = t.description;
    // A chain (docs/CHAINS.md): the calls it makes, in order, each through the whole pipeline.
    const steps = $("#try-chain");
    steps.textContent = "";
    steps.hidden = !t.chain;
    if (t.chain) {
      steps.append(t.chain.kind === "code" ? "chain: a Python body, run in the sandbox" : "chain: ",
        ...t.chain.steps.flatMap((s, i) => [i ? " → " : "", h("code", { text: `${s.id}: ${s.tool}` })]));
    }
    const form = $("#try-form");
    form.textContent = "";
    const schema = t.input_schema || {};
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    for (const [prop, sub] of Object.entries(props)) form.append(...fieldFor(prop, sub || {}, required.has(prop)));
    if (!Object.keys(props).length) form.appendChild(h("p", { class: "muted", text: "This tool takes no arguments." }));
    if (canAct()) form.appendChild(h("button", { type: "submit", id: "try-run" }, "Run through the pipeline"));
    else form.appendChild(h("p", { class: "muted", id: "try-viewer", text: "Your role (viewer) may read tools but not call them." }));
    $("#try-result").textContent = "";
    // On a phone the panel sits under the whole tool list: bring it into view.
    if (window.matchMedia("(max-width: 760px)").matches) $("#try-panel").scrollIntoView({ block: "start" });
  }
  $("#try-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = selected;
    const tool = state.tools.find((x) => x.name === name);
    const required = new Set(((tool && tool.input_schema) || {}).required || []);
    const args = {};
    try {
      for (const input of $("#try-form").querySelectorAll("[data-kind]")) {
        const kind = input.dataset.kind;
        if (kind === "boolean") { args[input.name] = input.checked; continue; }
        if (input.value === "") {
          if (input.dataset.nullable && required.has(input.name)) args[input.name] = null;
          continue;
        }
        if (kind === "number") args[input.name] = Number(input.value);
        else if (kind === "json" || kind === "enum") args[input.name] = JSON.parse(input.value);
        else args[input.name] = input.value;
      }
    } catch (e) { showResult({ error: `an argument is not valid JSON: ${e.message}` }); return; }
    const out = $("#try-result");
    out.textContent = "running…";
    const started = performance.now();
    try {
      const result = await api("POST", `/api/tools/${encodeURIComponent(name)}/call`, { arguments: args });
      showResult(result, performance.now() - started);
    } catch (e) { showResult({ error: e.message, data: e.data }, performance.now() - started); }
  });
  function showResult(result, elapsed) {
    const out = $("#try-result");
    out.textContent = "";
    if (result.error) {
      out.appendChild(h("div", { class: "alert error", id: "try-error", text: result.error }));
      return;
    }
    const texts = (result.content || []).filter((c) => c.type === "text").map((c) => c.text);
    const meta = result._meta || {};
    const head = h("p", { class: "muted" }, `${result.isError ? "isError" : "ok"} in ${elapsed ? elapsed.toFixed(0) : "?"} ms`,
      meta["nexus/server"] ? ` from ${meta["nexus/server"]}` : "", meta["nexus/cache"] ? ` (cache ${meta["nexus/cache"]})` : "");
    out.appendChild(head);
    const first = texts[0] || "";
    if (first.startsWith("SYSTEM_ALERT:")) {
      const [alertLine, ...rest] = first.split("\n");
      out.appendChild(h("div", { class: "alert", id: "try-alert", text: alertLine }));
      const off = meta["nexus/offload"];
      if (off) out.appendChild(h("p", { class: "muted", text: `offloaded: ${off.bytes} bytes saved to ${off.file}; preview:` }));
      out.appendChild(h("pre", { id: "try-output", text: rest.join("\n").trim() }));
      return;
    }
    out.appendChild(h("pre", { id: "try-output", class: result.isError ? "outcome-bad" : "", text: texts.join("\n") || JSON.stringify(result, null, 2) }));
  }

  // -- calls ------------------------------------------------------------------------------------
  function callMatches(c) {
    const q = $("#call-filter").value.trim().toLowerCase();
    const o = $("#call-outcome").value;
    if (q && ![c.tool, c.server || "", c.frontend, c.client || "", c.outcome, via(c)].join(" ").toLowerCase().includes(q)) return false;
    if (o === "ok" && c.outcome !== "ok") return false;
    if (o === "error" && (c.outcome === "ok" || c.outcome === "input_required")) return false;
    if (o === "cached" && !(c.cache === "hit" || c.cache === "merged")) return false;
    if (o === "offloaded" && !c.offloaded) return false;
    return true;
  }
  // Where a call came from: code in python_sandbox, a chain's step, a control-plane task, else the client itself.
  function via(c) { return c.via || (c.frontend === "executor" ? "task" : "client"); }
  function callRow(c) {
    return h("tr", { "data-seq": c.seq, "data-tool": c.tool },
      h("td", { text: new Date(c.timestamp * 1000).toLocaleTimeString() }),
      h("td", {}, h("strong", { text: c.tool }), c.method !== "tools/call" ? h("div", { class: "muted", text: c.method }) : null),
      h("td", { text: c.server || "-" }),
      h("td", { text: c.frontend + (c.client ? `: ${c.client}` : "") }),
      h("td", {}, h("span", { class: "badge via-" + via(c), "data-via": via(c), text: via(c) })),
      h("td", { class: "num", text: c.duration_ms.toFixed(1) + " ms" }),
      h("td", { class: c.outcome === "ok" ? "outcome-ok" : "outcome-bad", text: c.outcome + (c.retries ? ` (${c.retries} retries)` : "") }),
      h("td", { text: c.cache || "-" }),
      h("td", {}, c.offloaded ? "yes" : "", ownOffload(c)),
    );
  }
  // The offloaded file of a call this viewer made (its "try it"): the admin API serves it to its owner only.
  function ownOffload(c) {
    if (!c.offload_file || `${c.frontend}:${c.client || "-"}` !== state.viewer) return null;
    return h("a", { class: "open-offload", href: `/api/offload/${encodeURIComponent(c.offload_file)}`,
      target: "_blank", rel: "noopener", title: c.offload_file }, c.offloaded ? " open" : "open");
  }
  function renderCalls() {
    const body = $("#calls-table tbody");
    body.textContent = "";
    for (const c of state.calls.filter(callMatches).slice(0, 300)) body.appendChild(callRow(c));
  }
  $("#call-filter").addEventListener("input", renderCalls);
  $("#call-outcome").addEventListener("change", renderCalls);

  // -- metrics ----------------------------------------------------------------------------------
  let historyTimer = null;
  async function refreshHistory() {
    clearTimeout(historyTimer);
    if (page() !== "metrics") return;
    try {
      const data = await api("GET", "/api/dashboard/history");
      state.history = data.history;
      state.metrics = data.metrics;
      renderMetrics();
    } catch (e) { /* shown by the live dot */ }
    historyTimer = setTimeout(refreshHistory, 5000);
  }
  function top(seriesMap, index, count) {
    return Object.entries(seriesMap || {})
      .map(([name, rows]) => ({ name, values: rows.map((p) => p[index]), total: rows.reduce((a, p) => a + (p[0] || 0), 0) }))
      .sort((a, b) => b.total - a.total).slice(0, count);
  }
  function renderMetrics() {
    const m = state.metrics;
    if (!m) return;
    $("#metrics-window").textContent = `latency figures cover the last ${m.window} calls per tool`;
    let calls = 0, errors = 0, hits = 0, misses = 0, limited = 0, offloads = 0, kept = 0;
    for (const t of Object.values(m.tools)) {
      calls += t.calls; errors += t.errors; hits += t.cache_hits; misses += t.cache_misses;
      limited += t.rate_limited; offloads += t.offloads; kept += t.offload_bytes_kept_out;
    }
    const cards = $("#metric-cards");
    cards.textContent = "";
    for (const [label, value] of [
      ["Calls", calls], ["Errors", errors], ["Error rate", calls ? (100 * errors / calls).toFixed(1) + " %" : "-"],
      ["Cache hit rate", hits + misses ? (100 * hits / (hits + misses)).toFixed(0) + " %" : "-"],
      ["Rate-limited", limited], ["Offloads", `${offloads} (${(kept / 1024).toFixed(0)} KiB kept out)`],
      ["Redactions", m.redactions ? m.redactions.total : 0], ["In flight", m.gateway.in_flight],
    ]) cards.appendChild(h("div", { class: "card" }, h("div", { class: "value", text: value }), h("div", { class: "label", text: label })));
    const hist = state.history;
    if (hist) {
      NexusCharts.line($("#chart-throughput"), hist.times, top(hist.tools, 0, 6));
      NexusCharts.line($("#chart-latency"), hist.times, top(hist.tools, 2, 6));
      NexusCharts.line($("#chart-servers"), hist.times, top(hist.servers, 0, 6));
      const totals = hist.totals || [];
      NexusCharts.line($("#chart-governance"), hist.times, ["cache_hits", "cache_misses", "rate_limited", "offloads"].map((k) => ({ name: k.replace("_", " "), values: totals.map((t) => t[k]) })));
    }
    const tb = $("#metrics-tools tbody");
    tb.textContent = "";
    for (const [name, t] of Object.entries(m.tools).sort()) {
      const l = t.latency;
      tb.appendChild(h("tr", { "data-tool": name }, h("td", { text: name }), h("td", { class: "num", text: t.calls }),
        h("td", { class: "num", text: Object.entries(t.errors_by_class).map(([k, v]) => `${k} ${v}`).join(", ") || "0" }),
        h("td", { class: "num", text: ms(l.avg) }), h("td", { class: "num", text: ms(l.p50) }), h("td", { class: "num", text: ms(l.p95) }),
        h("td", { class: "num", text: ms(l.p99) }), h("td", { class: "num", text: ms(l.max) }),
        h("td", { class: "num", text: `${t.cache_hits}/${t.cache_misses}` }), h("td", { class: "num", text: t.rate_limited }),
        h("td", { class: "num", text: t.offloads })));
    }
    const ub = $("#metrics-upstreams tbody");
    ub.textContent = "";
    for (const [name, u] of Object.entries(m.upstreams).sort()) {
      const s = m.servers[name] || { calls: 0, errors: 0, latency: {} };
      ub.appendChild(h("tr", { "data-server": name }, h("td", { text: name }), h("td", {}, h("span", { class: "badge " + u.state, text: u.state })),
        h("td", { class: "num", text: s.calls }), h("td", { class: "num", text: s.errors }), h("td", { class: "num", text: ms(s.latency.p95) }),
        h("td", { class: "num", text: u.restarts }), h("td", { class: "num", text: u.health_failures }),
        h("td", { class: "num", text: u.pid ?? "-" }), h("td", { class: "num", text: mib(u.rss_bytes) })));
    }
    renderRedactions(m.redactions || { total: 0, rows: [] });
  }
  // Counts only (server, tool, kind, where, mode): the step never keeps a value it found.
  const REDACT_MODES = { on: "replaced", report: "reported only" };
  function renderRedactions(redactions) {
    const rb = $("#metrics-redactions tbody");
    rb.textContent = "";
    for (const r of redactions.rows) {
      rb.appendChild(h("tr", { "data-server": r.server, "data-tool": r.tool, "data-kind": r.kind, "data-mode": r.mode },
        h("td", { text: r.server }), h("td", { text: r.tool }), h("td", {}, h("span", { class: "badge", text: r.kind })),
        h("td", { text: r.where }), h("td", { text: REDACT_MODES[r.mode] || r.mode }), h("td", { class: "num", text: r.count })));
    }
    $("#metrics-redactions").hidden = redactions.rows.length === 0;
    $("#redactions-empty").hidden = redactions.rows.length > 0;
  }

  // -- xiaozhi and frontends --------------------------------------------------------------------
  function renderXiaozhi() {
    const links = Array.isArray(state.frontends.xiaozhi) ? state.frontends.xiaozhi : [];
    const body = $("#xiaozhi-table tbody");
    body.textContent = "";
    $("#xiaozhi-empty").hidden = links.length > 0;
    $("#xiaozhi-table").hidden = links.length === 0;
    for (const l of links) {
      body.appendChild(h("tr", {}, h("td", { text: l.role }), h("td", { text: l.url }),
        h("td", {}, h("span", { class: "badge " + (l.connected ? "READY" : "ERROR"), text: l.connected ? "connected" : "disconnected" })),
        h("td", { text: l.since || "-" }), h("td", { class: "num", text: l.calls_served }),
        h("td", { text: l.last_close_code == null ? "-" : `${l.last_close_code} ${l.last_close_reason || ""}` }),
        h("td", { class: "muted", text: l.last_error || "" })));
    }
    const fb = $("#frontends-table tbody");
    fb.textContent = "";
    const rows = state.metrics ? state.metrics.frontends : {};
    for (const [name, f] of Object.entries(rows).sort()) {
      fb.appendChild(h("tr", {}, h("td", { text: name }), h("td", { class: "num", text: f.calls }), h("td", { class: "num", text: f.errors }),
        h("td", { class: "num", text: f.active_clients }), h("td", { class: "num", text: f.connected ?? "-" })));
    }
  }

  // -- tasks ------------------------------------------------------------------------------------
  async function renderTasks() {
    const box = $("#tasks-body");
    if (!state.control) {  // asked first: no request that can only fail (and show a 409 in the console)
      box.textContent = "";
      box.appendChild(h("p", { class: "muted", id: "tasks-disabled", text: "The control plane is not enabled on this gateway: there are no tasks to show." }));
      box.appendChild(h("p", { class: "muted", text: "Turn it on with llm.base_url (an OpenAI-compatible endpoint) or control.enabled: true (docs/CONTROL.md)." }));
      return;
    }
    let data;
    try { data = await api("GET", "/api/tasks?limit=50"); }
    catch (e) {
      box.textContent = "";
      if (e.status === 409) {
        box.appendChild(h("p", { class: "muted", id: "tasks-disabled", text: "The control plane is not enabled on this gateway: there are no tasks to show." }));
        box.appendChild(h("p", { class: "muted", text: e.message }));
      } else box.appendChild(h("div", { class: "alert error", text: e.message }));
      return;
    }
    box.textContent = "";
    if (!data.tasks.length) { box.appendChild(h("p", { class: "muted", id: "tasks-empty", text: "No tasks yet." })); return; }
    const table = h("table", { class: "grid", id: "tasks-table" },
      h("thead", {}, h("tr", {}, ...["Created", "Goal", "Mode", "Status", "Plan", "Steps", "Result or error"].map((c) => h("th", { text: c })))));
    const body = h("tbody");
    for (const t of data.tasks) {
      const at = t.plan ? Math.min(t.plan.current + 1, t.plan.total) : 0;
      const plan = t.plan ? `step ${at} of ${t.plan.total}${t.plan.revisions ? `, ${t.plan.revisions} revisions` : ""}` : "-";
      const outcome = t.error || (t.result == null ? "" : typeof t.result === "string" ? t.result : JSON.stringify(t.result));
      body.appendChild(h("tr", { "data-task": t.id },
        h("td", { text: t.created_at ? new Date(t.created_at * 1000).toLocaleTimeString() : "-" }),
        h("td", {}, h("strong", { text: t.goal }), h("div", { class: "muted", text: t.id })),
        h("td", { text: t.mode }),
        h("td", {}, h("span", { class: "badge " + ({ succeeded: "READY", running: "CONNECTING", failed: "ERROR" }[t.status] || ""), text: t.status })),
        h("td", { text: plan }), h("td", { class: "num", text: t.steps }),
        h("td", { class: t.error ? "outcome-bad" : "muted", text: outcome.slice(0, 300) })));
    }
    table.appendChild(body);
    box.appendChild(table);
  }

  // -- audit ------------------------------------------------------------------------------------
  // Newest first, a page at a time (the server bounds it); "Older" goes on from where a page ended.
  let auditNext = null;
  function auditQuery(before) {
    const q = new URLSearchParams();
    for (const [key, id] of [["who", "#audit-who"], ["tool", "#audit-tool"], ["outcome", "#audit-outcome"], ["kind", "#audit-kind"]]) {
      const v = $(id).value.trim();
      if (v) q.set(key, v);
    }
    for (const [key, id] of [["since", "#audit-since"], ["until", "#audit-until"]]) {
      const v = $(id).value;
      if (v) q.set(key, new Date(v).toISOString());  // datetime-local is the viewer's time: sent as UTC
    }
    if (before) q.set("before", before);
    q.set("limit", "50");
    return q.toString();
  }
  async function loadAudit(more) {
    const body = $("#audit-table tbody");
    let data;
    try { data = await api("GET", "/api/audit?" + auditQuery(more ? auditNext : null)); }
    catch (e) { toast(`audit: ${e.message}`, true); return; }
    if (!more) body.textContent = "";
    $("#audit-disabled").hidden = data.enabled;
    for (const r of data.records) {
      const what = r.tool || r.action || r.kind;
      body.appendChild(h("tr", { "data-seq": r.seq, "data-who": r.who || "", "data-outcome": r.outcome || "" },
        h("td", { class: "num", text: r.seq }),
        h("td", { text: r.time ? new Date(r.time).toLocaleString() : "-" }),
        h("td", { text: r.who || "-" }),
        h("td", { text: r.kind }),
        h("td", {}, h("code", { text: what })),
        h("td", { class: r.outcome === "ok" ? "outcome-ok" : "outcome-bad", text: (r.outcome || "") + (r.status ? ` (${r.status})` : "") }),
        h("td", { text: [r.frontend, r.client].filter(Boolean).join(": ") || "-" }),
        h("td", { class: "num", text: r.latency_ms == null ? "-" : r.latency_ms.toFixed(1) + " ms" })));
    }
    auditNext = data.next_before;
    $("#audit-more").hidden = auditNext == null;
    $("#audit-empty").hidden = body.children.length > 0;
  }
  async function verifyAudit() {
    const out = $("#audit-verify");
    try {
      const v = await api("GET", "/api/audit/verify");
      out.className = v.ok ? "ok" : "bad";
      out.textContent = v.ok ? `chain ok: ${v.lines} record${v.lines === 1 ? "" : "s"} in ${v.files} file${v.files === 1 ? "" : "s"}` : `chain broken${v.line ? ` at ${v.file} line ${v.line}` : ""}: ${v.problem}`;
    } catch (e) { out.className = "bad"; out.textContent = `cannot verify: ${e.message}`; }
  }
  $("#audit-filters").addEventListener("submit", (event) => { event.preventDefault(); loadAudit(false); verifyAudit(); });
  $("#audit-more").addEventListener("click", () => loadAudit(true));

  // -- loading and live updates -----------------------------------------------------------------
  function render() {
    const p = page();
    if (p === "servers") renderServers();
    else if (p === "tools") renderTools();
    else if (p === "calls") renderCalls();
    else if (p === "metrics") renderMetrics();
    else if (p === "xiaozhi") renderXiaozhi();
  }
  async function load() {
    const data = await api("GET", "/api/dashboard");
    state.servers = new Map(data.servers.map((s) => [s.name, { ...s, _at: Date.now() }]));
    state.tools = data.tools.sort((a, b) => a.name.localeCompare(b.name));
    state.calls = data.calls.reverse();
    state.metrics = data.metrics;
    state.history = data.history;
    state.frontends = data.frontends;
    state.control = data.control;
    state.viewer = data.viewer;
    state.role = data.role || "admin";
    document.body.dataset.role = state.role;  // style.css hides what a viewer cannot do (integrity's Approve too)
    const who = $("#whoami");
    who.textContent = "";
    if (data.user && data.user.method !== "open") {
      who.append(h("span", { text: data.user.name || data.user.who }), " ",
        h("span", { class: "badge role-" + state.role, id: "role-badge", text: state.role }));
    }
    $("#logout-form").hidden = !data.token_required;
    $("#reload-config").disabled = !data.reloadable;
    $("#reload-config").hidden = !canAct();
    $("#reload-config").title = data.reloadable ? "Re-read the config file" : "started without a config file";
    state.mine = null;
    if (data.user && String(data.user.who).startsWith("user:")) await loadMine().catch(() => {});
    render();
  }
  let tick = null;
  function connect() {
    const source = new EventSource("/api/events");
    const live = (on) => { $("#live").className = "dot " + (on ? "on" : "off"); $("#live-text").textContent = on ? "live" : "reconnecting"; };
    source.addEventListener("open", () => live(true));
    source.addEventListener("error", () => live(false));
    source.addEventListener("hello", (e) => {
      for (const s of JSON.parse(e.data).servers) state.servers.set(s.name, { ...state.servers.get(s.name), ...s, _at: Date.now() });
      if (page() === "servers") renderServers();
    });
    source.addEventListener("server", (e) => {
      const s = JSON.parse(e.data);
      state.servers.set(s.name, { ...state.servers.get(s.name), ...s, _at: Date.now() });
      if (page() === "servers") renderServers();
      // Tools come and go with their servers.
      clearTimeout(tick); tick = setTimeout(() => api("GET", "/api/dashboard").then((d) => { state.tools = d.tools.sort((a, b) => a.name.localeCompare(b.name)); state.metrics = d.metrics; state.frontends = d.frontends; if (page() !== "calls") render(); }).catch(() => {}), 400);
    });
    source.addEventListener("call", (e) => {
      const c = JSON.parse(e.data);
      state.calls.unshift(c);
      if (state.calls.length > MAX_CALLS) state.calls.length = MAX_CALLS;
      if (page() === "calls" && callMatches(c)) {
        const body = $("#calls-table tbody");
        body.insertBefore(callRow(c), body.firstChild);
        while (body.children.length > 300) body.lastChild.remove();
      }
    });
    source.addEventListener("resync", () => load().catch(() => {}));
  }
  // Uptimes count on between events (from the figure the server gave and when it was given).
  setInterval(() => { if (page() === "servers" && !document.hidden) renderServers(); }, 5000);
  load().then(() => { show(); connect(); }).catch((e) => toast(`cannot load: ${e.message}`, true));
})();
