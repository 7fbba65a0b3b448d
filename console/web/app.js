// The mcpfsm console page: renders /api/status (fetched once on load) and
// then /api/events (Server-Sent Events) into one table row per server,
// with its diagram and recent transitions on demand, and posts the
// Reconnect and Reload buttons.
"use strict";

const cards = document.getElementById("servers");
const template = document.getElementById("card");
let diagram = "";      // the SVG of the connection machine, from /diagram.svg
let report = null;     // the last status report
let offset = 0;        // host clock minus this browser's clock, in ms

function hostNow() { return Date.now() + offset; }

function duration(ms) {
  if (ms < 0) ms = 0;
  if (ms < 10000) return (ms / 1000).toFixed(1) + "s";
  let s = Math.round(ms / 1000);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return d + "d " + h + "h";
  if (h) return h + "h " + m + "m";
  if (m) return m + "m " + s + "s";
  return s + "s";
}

function clockTime(iso) {
  return new Date(iso).toISOString().slice(11, 19);
}

function setMessage(el, text, isError) {
  el.textContent = text;
  el.title = text;
  el.classList.toggle("error", !!isError);
}

function cardFor(name) {
  let card = cards.querySelector('tbody.card[data-server="' + CSS.escape(name) + '"]');
  if (card) return card;
  card = template.content.firstElementChild.cloneNode(true);
  card.dataset.server = name;
  card.querySelector(".name").textContent = name;
  const button = card.querySelector("button.reconnect");
  button.dataset.server = name;
  button.addEventListener("click", () => reconnect(name, card, button));
  const signin = card.querySelector("button.signin");
  signin.addEventListener("click", () => signIn(name, card, signin));
  const details = card.querySelector("button.details");
  details.addEventListener("click", () => toggleDetails(card, details));
  return card;
}

// toggleDetails shows or hides the server's diagram and transitions; the
// drawing is made the first time it is shown.
function toggleDetails(card, button) {
  const row = card.querySelector("tr.detail");
  const open = row.hidden;
  row.hidden = !open;
  button.setAttribute("aria-expanded", String(open));
  button.textContent = open ? "Hide" : "Diagram";
  if (open && !card.querySelector(".diagram svg")) {
    card.querySelector(".diagram").innerHTML = diagram;
    const svg = card.querySelector(".diagram svg");
    if (svg) svg.classList.add("focus");
    const s = report && report.servers.find(x => x.name === card.dataset.server);
    if (s) highlight(card, s);
  }
}

// levels returns state and the superstates it lies in, innermost first,
// as the drawing's node of state names them: the states whose arrows
// leave it.
function levels(svg, state) {
  const node = svg.querySelector('.node[data-state="' + CSS.escape(state) + '"]');
  return [state].concat(node ? node.dataset.within.split(" ").filter(Boolean) : []);
}

function highlight(card, s) {
  const svg = card.querySelector(".diagram svg");
  if (!svg) return;
  svg.querySelectorAll(".current, .last, .next").forEach(el => el.classList.remove("current", "last", "next"));
  const node = svg.querySelector('.node[data-state="' + CSS.escape(s.state) + '"]');
  if (node) node.classList.add("current");
  for (const from of levels(svg, s.state)) {
    svg.querySelectorAll('.edge[data-from="' + CSS.escape(from) + '"]').forEach(el => el.classList.add("next"));
  }
  const t = s.transitions[s.transitions.length - 1];
  if (t && t.to === s.state) {
    // The arrow as declared: from the state it left, or from the
    // innermost superstate of it that the transition was declared on.
    for (const from of levels(svg, t.from)) {
      const edge = svg.querySelector('.edge[data-from="' + CSS.escape(from) + '"][data-to="' + CSS.escape(t.to) + '"]');
      if (edge) { edge.classList.add("last"); break; }
    }
  }
}

// instancesText says how many per-client instances run, by state.
function instancesText(by) {
  if (!by) return "none";
  const states = Object.keys(by).sort();
  const total = states.reduce((n, st) => n + by[st], 0);
  return total + " (" + states.map(st => by[st] + " " + st).join(", ") + ")";
}

// callersText says who called the server over the last hour, and what
// its policy refused.
function callersText(callers) {
  if (!callers || !callers.length) return "none";
  return callers.map(c => {
    const who = c.others ? "others" : (c.operator ? c.subject + " (operator)" : c.subject);
    const refused = (c.denied || 0) + (c.limited || 0);
    let text = who + ": " + c.allowed + " let through";
    if (refused) text += ", " + refused + " refused (" + (c.denied || 0) + " scope, " + (c.limited || 0) + " rate)";
    return text;
  }).join("\n");
}

function renderServer(s) {
  const card = cardFor(s.name);
  card.dataset.state = s.state;
  card.classList.toggle("alarm", s.alarm);
  card.classList.toggle("healthy", s.state === "established");
  const badge = card.querySelector(".state");
  badge.textContent = s.state;
  card.querySelector(".phrase").textContent = s.phrase;
  card.querySelector(".f-state").textContent = s.state + ": " + s.phrase;
  let attempt = s.attempt + "/" + s.maxAttempts;
  if (!s.attempt) attempt += " (no outage)";
  else if (s.state === "established") attempt = "came back on attempt " + attempt;
  card.querySelector(".f-attempt").textContent = attempt;
  card.querySelector(".f-tools").textContent =
    String(s.toolCount) + (s.hiddenTools ? " (" + s.hiddenTools + " hidden)" : "");
  card.querySelector(".f-tools").title = s.tools.join("\n");
  const cause = card.querySelector(".f-cause");
  cause.textContent = s.lastError || "none";
  cause.title = s.lastError || "";
  card.querySelector(".f-cause-full").textContent = s.lastError || "none";
  card.querySelector(".f-sandbox").textContent = s.sandbox ? s.sandbox.join("\n") : "none";
  card.querySelector(".f-instances").textContent = instancesText(s.instances);
  card.querySelector(".f-callers").textContent = callersText(s.callers);
  card.querySelector("button.signin").hidden = !s.signIn;
  if (!s.signIn) card.querySelector("a.signin-link").hidden = true;
  highlight(card, s);
  const list = card.querySelector(".transitions ol");
  list.textContent = "";
  const recent = s.transitions.slice(-6).reverse();
  for (const t of recent) {
    const li = document.createElement("li");
    const at = document.createElement("span");
    at.className = "at";
    at.textContent = clockTime(t.at);
    const to = document.createElement("span");
    to.className = "to" + (alarmStates.has(t.to) ? " alarm" : "");
    to.textContent = t.to;
    const ev = document.createElement("span");
    ev.className = "event";
    ev.textContent = t.event + (t.attempt ? " " + t.attempt + "/" + t.maxAttempts : "");
    li.append(at, " " + t.from + " → ", to, " ", ev);
    li.title = li.textContent + (t.error ? "\n" + t.error : "");
    list.appendChild(li);
  }
  if (!recent.length) list.innerHTML = '<li class="at">none yet</li>';
  return card;
}

// The alarm states, read from the diagram itself.
let alarmStates = new Set();

function tick() {
  if (!report) return;
  for (const s of report.servers) {
    const card = cardFor(s.name);
    const since = s.since ? duration(hostNow() - Date.parse(s.since)) + " (since " + clockTime(s.since) + ")" : "";
    card.querySelector(".f-since").textContent = since;
    card.querySelector(".f-next").textContent = s.nextRetry
      ? "in " + duration(Date.parse(s.nextRetry) - hostNow()) + " (at " + clockTime(s.nextRetry) + ")"
      : "none";
  }
}

function render(r) {
  report = r;
  offset = Date.parse(r.now) - Date.now();
  const seen = new Set();
  let ok = 0, failing = 0;
  const bodies = () => [...cards.querySelectorAll("tbody.card")];
  r.servers.forEach((s, i) => {
    const card = renderServer(s);
    seen.add(s.name);
    const at = bodies()[i];
    if (at !== card) cards.insertBefore(card, at || null);
    if (s.alarm) failing++; else if (s.state === "established") ok++;
  });
  for (const card of bodies()) {
    if (!seen.has(card.dataset.server)) card.remove();
  }
  const empty = document.querySelector(".empty");
  if (!r.servers.length && !empty) cards.insertAdjacentHTML("afterend", '<p class="empty">This host runs no servers.</p>');
  if (r.servers.length && empty) empty.remove();
  document.getElementById("summary").textContent =
    r.servers.length + " servers · " + ok + " connected · " + failing + " failing";
  tick();
}

async function post(url) {
  const res = await fetch(url, { method: "POST", credentials: "same-origin" });
  let body = {};
  try { body = await res.json(); } catch (e) { body = { error: res.status + " " + res.statusText }; }
  return { ok: res.ok, body };
}

async function reconnect(name, card, button) {
  const msg = card.querySelector(".msg");
  button.disabled = true;
  setMessage(msg, "reconnecting…");
  try {
    const { ok, body } = await post("/api/servers/" + encodeURIComponent(name) + "/reconnect");
    setMessage(msg, ok ? "reconnected" : (body.error || "reconnect failed"), !ok);
  } catch (e) {
    setMessage(msg, "host unreachable: " + e.message, true);
  } finally {
    button.disabled = false;
  }
}

// signIn starts the sign-in a server needs and shows its authorization
// URL as a link for the operator to open (an http(s) URL only).
async function signIn(name, card, button) {
  const msg = card.querySelector(".msg");
  const link = card.querySelector("a.signin-link");
  button.disabled = true;
  setMessage(msg, "starting the sign-in…");
  try {
    const { ok, body } = await post("/api/servers/" + encodeURIComponent(name) + "/signin");
    const url = ok && typeof body.url === "string" && /^https?:\/\//i.test(body.url) ? body.url : "";
    if (url) {
      link.href = url;
      link.title = url;
      link.hidden = false;
      setMessage(msg, "open the link to sign in; the server comes up after it");
    } else {
      setMessage(msg, body.error || "the sign-in did not start", true);
    }
  } catch (e) {
    setMessage(msg, "host unreachable: " + e.message, true);
  } finally {
    button.disabled = false;
  }
}

async function headerAction(button, url, busy, done) {
  const msg = document.getElementById("msg");
  button.disabled = true;
  setMessage(msg, busy);
  try {
    const { ok, body } = await post(url);
    setMessage(msg, ok ? done : (body.error || "failed"), !ok);
  } catch (e) {
    setMessage(msg, "host unreachable: " + e.message, true);
  } finally {
    button.disabled = false;
  }
}

// first fetches the status once, so the page shows it before the event
// stream sends its first.
async function first() {
  try {
    const res = await fetch("/api/status", { credentials: "same-origin" });
    if (res.ok && !report) render(await res.json());
  } catch (e) { /* the event stream reports the host unreachable */ }
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/api/events");
  es.addEventListener("status", e => {
    live.textContent = "live";
    live.classList.remove("off");
    render(JSON.parse(e.data));
  });
  es.onerror = () => {
    live.textContent = "reconnecting to host…";
    live.classList.add("off");
  };
}

async function main() {
  const res = await fetch("/diagram.svg", { credentials: "same-origin" });
  diagram = res.ok ? await res.text() : "";
  const holder = document.createElement("div");
  holder.innerHTML = diagram;
  holder.querySelectorAll(".node.alarm").forEach(n => alarmStates.add(n.dataset.state));
  const all = document.getElementById("reconnect-all");
  all.addEventListener("click", () => headerAction(all, "/api/reconnect", "reconnecting all…", "all servers reconnected"));
  const reload = document.getElementById("reload");
  reload.addEventListener("click", () => headerAction(reload, "/api/reload", "reloading…", "configuration reloaded"));
  await first();
  connect();
  setInterval(tick, 1000);
}

main();
