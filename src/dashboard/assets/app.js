// cohort's dashboard: renders what the server pushes over server-sent events.
"use strict";
(function () {
  const screens = new Map();   // pane id -> {rows, cols, cursor, alternate}
  let view = null;             // the latest view (teams, sessions, agents)
  let zoomed = null;           // the pane shown large
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function chip(text, cls) { return el("span", "chip" + (cls ? " " + cls : ""), text); }

  function verdictChip(s) {
    if (!s.verdict) return null;
    const cls = s.verdict === "running" ? "run" : s.ok === true ? "ok" : s.ok === false ? "bad" : "";
    return chip(s.verdict, cls);
  }

  function paint(pre, pane, whole) {
    const s = screens.get(pane);
    if (!s) return;
    let rows = s.rows.slice();
    while (!whole && rows.length && rows[rows.length - 1] === "") rows.pop();
    pre.innerHTML = rows.join("\n");   // rows are escaped HTML from the server
    // A card too short for the whole screen shows its end, where a terminal's news is.
    if (!whole) pre.scrollTop = pre.scrollHeight;
  }

  function card(s) {
    const c = el("article", "card");
    c.dataset.pane = s.pane;
    c.dataset.session = s.name;
    const head = el("div", "card-head");
    head.append(el("span", "name", s.name));
    if (s.badge) head.append(chip(s.badge, "badge"));
    // A team's pane is titled "Team :: agent": the badge and the name say that already.
    const said = [s.name, s.agent && s.agent.name].filter(Boolean);
    const rest = s.title && s.badge && s.title.startsWith(s.badge + " :: ")
      ? s.title.slice(s.badge.length + 4) : s.title;
    if (s.title && !said.includes(rest)) head.append(el("span", "title", s.title));
    if (s.agent) {
      head.append(chip("agent " + s.agent.name));
      if (s.agent.state) head.append(chip(s.agent.state, s.agent.state === "idle" ? "ok" : "run"));
      if (s.agent.unread) head.append(chip(s.agent.unread + " unread", "unread"));
    }
    const v = verdictChip(s);
    if (v) head.append(v);
    if (s.exited && !(s.verdict || "").startsWith("exited")) head.append(chip("exited", "bad"));
    if (s.locked_by) head.append(chip("locked by " + s.locked_by, "lock"));
    if (s.recording) head.append(chip("● rec", "rec"));
    if (s.agent && s.agent.reason) head.append(el("div", "reason", s.agent.reason));
    const w = s.agent && s.agent.worker;
    if (w) {
      head.append(el("div", "worker", [w.cli, w.branch, w.spent].filter(Boolean).join(" · ")));
      if (w.changes) head.append(el("div", "worker changes", w.changes));
      if (w.approval) {
        const asks = el("div", "approval");
        asks.append(el("div", "request", "asks: " + w.approval.request));
        if (view.input) {
          const said = el("div", "said");
          const answer = async (b, path, body) => {
            for (const other of asks.querySelectorAll("button")) other.disabled = true;
            said.textContent = "";
            const r = await post(path, body);
            // Refused, or pressed and still asking: say so and let the person try again.
            const told = r.ok && r.json ? (r.json.answered ? "" : r.json.detail) : r.text;
            if (told) {
              said.textContent = told;
              for (const other of asks.querySelectorAll("button")) other.disabled = false;
            }
          };
          const choices = w.approval.keys
            ? [["Yes (Enter)", "approve", "api/keys", { pane: s.pane, keys: w.approval.keys.yes }],
               ["No (Esc)", "deny", "api/keys", { pane: s.pane, keys: w.approval.keys.no }]]
            : [["Allow", "approve", "allow"], ["Always allow", "allow_always", "allow_always"],
               ["Deny", "deny", "deny"]].map(([label, cls, decision]) =>
                 [label, cls, "api/approve",
                  { worker: s.agent.name, decision: decision, since_ms: w.approval.since_ms }]);
          for (const [label, cls, path, body] of choices) {
            const b = el("button", cls, label);
            b.type = "button";
            b.addEventListener("click", (e) => {
              e.stopPropagation();
              answer(b, path, body);
            });
            asks.append(b);
          }
          asks.append(said);
        }
        head.append(asks);
      }
    }
    const pre = el("pre", "screen");
    paint(pre, s.pane);
    const foot = el("div", "card-foot");
    if (s.last_command) {
      foot.append("last: ");
      foot.append(el("code", "", s.last_command.split("\n")[0]));
    } else {
      foot.textContent = s.command;
    }
    c.append(head, pre, foot);
    c.addEventListener("click", () => openZoom(s.pane));
    return c;
  }

  function sessions() {
    const all = [];
    if (view) for (const t of view.teams) for (const s of t.sessions) all.push(s);
    return all;
  }

  function render() {
    const main = $("teams");
    main.replaceChildren();
    const all = sessions();
    $("summary").textContent = all.length + " session" + (all.length === 1 ? "" : "s") +
      " · " + view.backend + (view.input ? " · typing allowed" : " · read-only");
    if (!all.length && !view.teams.length) {
      main.append(el("div", "empty", "No sessions yet: open one through MCP (the open tool)."));
    }
    for (const t of view.teams) {
      const sec = el("section", "team");
      sec.dataset.team = t.name;
      if (t.colour) {
        sec.dataset.colour = t.colour;
        sec.style.setProperty("--team", t.colour);
      }
      const h = el("h2", "", t.name ? "Team " + t.name : "Outside teams");
      if (t.parent) h.append(el("span", "parent", " in " + t.parent));
      sec.append(h);
      const cards = el("div", "cards");
      for (const s of t.sessions) cards.append(card(s));
      sec.append(cards);
      if (t.idle_agents.length) {
        sec.append(el("div", "idle", "Without a session: " +
          t.idle_agents.map((a) => a.name + (a.state ? " (" + a.state + ")" : "")).join(", ")));
      }
      main.append(sec);
    }
    const notes = view.notifications || [];
    $("notes").hidden = !notes.length;
    $("note-list").replaceChildren(...notes.map((n) => {
      const li = el("li");
      li.append(el("b", "", n.to), " ← " + n.from + ": " + n.message);
      return li;
    }));
    if (zoomed) fillZoom();
  }

  function openZoom(pane) { zoomed = pane; $("zoom").hidden = false; fillZoom(); }
  function closeZoom() { zoomed = null; $("zoom").hidden = true; }

  function fillZoom() {
    const s = sessions().find((x) => x.pane === zoomed);
    if (!s) { closeZoom(); return; }
    $("zoom-title").textContent = s.name;
    $("zoom-meta").textContent = [s.agent && ("agent " + s.agent.name), s.verdict,
      s.locked_by && ("locked by " + s.locked_by)].filter(Boolean).join(" · ");
    $("zoom-attach").textContent = s.cohort_attach;
    $("zoom-native").textContent = s.attach;
    paint($("zoom-screen"), s.pane, true);
    $("zoom-input").hidden = !view.input;
  }

  function onScreen(s) {
    screens.set(s.pane, s);
    const c = document.querySelector('.card[data-pane="' + CSS.escape(s.pane) + '"] .screen');
    if (c) paint(c, s.pane);
    if (zoomed === s.pane) paint($("zoom-screen"), s.pane, true);
  }

  // Posts from the page; answers {ok, text, json} (json when the reply is JSON).
  async function post(path, body) {
    $("zoom-error").textContent = "";
    const key = document.querySelector('meta[name="cohort-page"]');
    let r;
    try {
      r = await fetch(path, { method: "POST",
                              headers: { "Content-Type": "application/json",
                                         "X-Cohort-Page": key ? key.content : "" },
                              body: JSON.stringify(body) });
    } catch (e) {
      $("zoom-error").textContent = String(e);
      return { ok: false, text: String(e), json: null };
    }
    const text = await r.text();
    if (!r.ok) $("zoom-error").textContent = text;
    let json = null;
    if ((r.headers.get("Content-Type") || "").startsWith("application/json")) {
      try { json = JSON.parse(text); } catch (e) { json = null; }
    }
    return { ok: r.ok, text: text, json: json };
  }

  $("zoom-close").addEventListener("click", closeZoom);
  $("zoom").addEventListener("click", (e) => { if (e.target === $("zoom")) closeZoom(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeZoom(); });
  $("zoom-copy").addEventListener("click", () => {
    const text = $("zoom-attach").textContent;
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
  });
  $("zoom-input").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("zoom-text").value;
    $("zoom-text").value = "";
    post("api/send", { pane: zoomed, text: text, enter: true });
  });
  $("zoom-input").querySelector("[data-key]").addEventListener("click", (e) => {
    post("api/keys", { pane: zoomed, keys: [e.target.dataset.key] });
  });

  const source = new EventSource("events");
  source.addEventListener("open", () => { $("link").textContent = "live"; $("link").className = "link up"; });
  source.addEventListener("error", () => { $("link").textContent = "reconnecting"; $("link").className = "link down"; });
  source.addEventListener("view", (e) => { view = JSON.parse(e.data); render(); });
  source.addEventListener("screen", (e) => onScreen(JSON.parse(e.data)));
})();
