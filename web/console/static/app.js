// app.js: the console's page. Everything shown is read from the desk; the only state kept
// is the identity (store.js). Every action is a button; every refusal is shown in the
// banner with its HTTP status and code.

import { Desk, DeskError } from "./api.js";
import * as keys from "./keys.js";
import * as store from "./store.js";

const $ = (id) => document.getElementById(id);
const desk = new Desk();
let me = null; // {partyId, hint, apiKey, keys}
let socket = null;
let socketWanted = false;
let connecting = false; // a connect waits for its ticket
let socketGen = 0; // counts the sockets dropped on purpose (a new key, forgetting the party)
let backoff = 1000;
let refreshTimer = 0;
let awaiting = ""; // the trade this page accepted and waits to see settled
const MAX_EVENTS = 30;

/** Builds an element: h("td", {class: "x"}, "text", child…). Text is never parsed as HTML. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function showError(e) {
  const text = e instanceof DeskError ? e.explain() : String((e && e.message) || e);
  const b = $("banner");
  notice("");
  b.replaceChildren(h("span", {}, text), h("button", { type: "button", class: "link", "aria-label": "Dismiss the message", onclick: () => (b.hidden = true) }, "×"));
  b.hidden = false;
}

function notice(text) {
  $("notice").textContent = text;
}

/** Runs an action of a button: disables it meanwhile, shows any error. */
function action(btn, fn) {
  return async (ev) => {
    if (ev) ev.preventDefault();
    btn.disabled = true;
    $("banner").hidden = true;
    try {
      await fn();
    } catch (e) {
      showError(e);
    } finally {
      // "Sign all" stays off while nothing waits for a signature.
      btn.disabled = btn.id === "sign-all" && $("pending-count").textContent === "0";
    }
  };
}

function short(id) {
  return id && id.length > 22 ? id.slice(0, 10) + "…" + id.slice(-8) : id;
}

function when(t) {
  return t ? new Date(t).toLocaleTimeString() : "";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- identity ----

async function register() {
  const name = $("display-name").value.trim();
  if (!name) throw new Error("Enter a display name first");
  notice("Making your key in this browser…");
  const pair = await keys.generateKeyPair();
  const raw = await keys.publicKeyRaw(pair.publicKey);
  const start = await desk.registerStart(name, keys.toB64(raw));
  await keys.verifyPartyId(start.partyId, raw);
  const sigs = [];
  for (const tx of start.topology) sigs.push(await keys.signHash(pair.privateKey, tx.hash));
  const done = await desk.registerComplete(start.registrationId, sigs);
  if (done.partyId !== start.partyId) throw new Error(`the desk completed party ${done.partyId}, not ${start.partyId}`);
  await adopt({ partyId: done.partyId, hint: done.hint, apiKey: done.apiKey, keys: pair });
  notice(`Registered as ${done.hint}. Download a backup now: the key exists only in this browser.`);
}

async function adopt(id) {
  await store.save(id);
  me = id;
  desk.apiKey = id.apiKey;
  render();
  // A socket opened with a previous key is closed by its rotation (4401), before or after
  // this: drop it quietly, and with it any refusal that close already showed.
  dropSocket();
  $("banner").hidden = true;
  connect();
  await refresh();
}

async function backup() {
  const pass = $("backup-pass").value;
  $("backup-pass").value = "";
  notice("Encrypting the backup…");
  const text = await keys.exportBackup(me, pass);
  const a = h("a", { href: URL.createObjectURL(new Blob([text], { type: "application/json" })), download: `rfqdesk-${me.hint}.backup.json` });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  notice("Backup downloaded. Keep the file and the passphrase apart.");
}

async function restore() {
  const f = $("restore-file").files[0];
  if (!f) throw new Error("Choose a backup file first");
  if (f.size > 64 * 1024) throw new Error("This file is too large to be a console backup");
  const pass = $("restore-pass").value;
  $("restore-pass").value = ""; // a secret: not left in the page, whatever happens
  notice("Opening the backup…");
  const id = await keys.importBackup(await f.text(), pass);
  await adopt(id);
  notice(`Restored ${id.hint}.`);
}

async function recoverKey() {
  const { challenge } = await desk.challenge(me.partyId);
  const sig = await keys.signText(me.keys.privateKey, challenge);
  const { apiKey } = await desk.rotate(me.partyId, challenge, sig);
  await adopt({ ...me, apiKey });
  notice("A new API key is in use; the old one no longer works. Download a fresh backup.");
}

async function forget() {
  if (!confirm("Forget this party in this browser? Without a backup its key is gone for good.")) return;
  socketWanted = false;
  dropSocket();
  await store.clear();
  me = null;
  desk.apiKey = "";
  render();
  notice("Forgotten.");
}

// ---- signing ----

/** Signs actions with the party key and executes them in batches of 50. */
async function signAndExecute(actions) {
  const results = [];
  for (let i = 0; i < actions.length; i += 50) {
    const batch = [];
    for (const a of actions.slice(i, i + 50)) batch.push({ actionId: a.id, signature: await keys.signHash(me.keys.privateKey, a.hash) });
    const res = await desk.execute(batch);
    results.push(...res.results);
  }
  const bad = results.filter((r) => r.status !== "executed" && r.status !== "in-flight");
  if (bad.length) throw new Error(`Signing failed for ${bad.length} action(s): ${bad.map((r) => r.error || r.status).join("; ")}`);
  return results;
}

// ---- wallet ----

async function faucet() {
  const draw = await desk.faucet();
  notice(`Faucet sent ${draw.sent.map((t) => `${t.amount} ${t.displaySymbol}`).join(", ") || "nothing"}; accepting the deposits…`);
  let inbox = [];
  for (let i = 0; i < 50; i++) {
    inbox = await desk.incoming();
    if (inbox.length >= draw.sent.length) break;
    await sleep(200);
  }
  await acceptDeposits(inbox);
}

async function acceptDeposits(inbox) {
  const actions = [];
  for (const tr of inbox) actions.push(...(await desk.acceptIncoming(tr.cid)).actions);
  await signAndExecute(actions);
  notice(`Accepted and signed ${inbox.length} deposit(s).`);
  await refresh();
}

// ---- taker ----

async function sendRFQ() {
  const qty = $("rfq-qty").value.trim();
  if (!/^\d+(\.\d+)?$/.test(qty)) throw new Error("Enter the quantity as a plain number, like 0.01");
  const makers = [...document.querySelectorAll("#rfq-makers input:checked")].map((c) => c.value);
  if (!makers.length) throw new Error("Pick at least one maker to ask");
  const rfq = await desk.createRFQ({
    direction: $("rfq-side").value,
    qty,
    base: $("rfq-base").value,
    quote: $("rfq-quote").value,
    invitedMakers: makers,
    ttlSeconds: Number($("rfq-ttl").value) || 60,
  });
  notice(`RFQ ${short(rfq.rfqId)} sent to ${makers.join(", ")}; quotes appear below as they arrive.`);
  await refresh();
}

async function acceptQuote(q) {
  const tr = await desk.accept(q.quoteId);
  if (tr.actions && tr.actions.length) await signAndExecute(tr.actions);
  awaiting = tr.tradeId;
  notice(`Trade ${short(tr.tradeId)} is settling…`);
  await refresh();
}

// ---- maker ----

async function quote(rfq, input) {
  const price = input.value.trim();
  if (!/^\d+(\.\d+)?$/.test(price)) throw new Error("Enter the price as a plain number, like 100000");
  const q = await desk.submitQuote(rfq.rfqId, price);
  notice(`Quote ${short(q.quoteId)} at ${price}: sign its ${q.actions.length} allocation action(s) under "Actions to sign" to make it live.`);
  await refresh();
}

async function signPending() {
  const pending = (await desk.pending()).actions;
  if (!pending.length) {
    notice("Nothing to sign.");
    return;
  }
  await signAndExecute(pending);
  notice(`Signed ${pending.length} action(s).`);
  await refresh();
}

// ---- stream ----

async function connect() {
  socketWanted = true;
  // One connect at a time: a reconnect timer and a new key may both ask while the ticket
  // is on its way, and two sockets would show every event twice.
  if (socket || connecting || !me) return;
  let t;
  const gen = socketGen;
  connecting = true;
  try {
    t = await desk.ticket();
  } catch (e) {
    connecting = false;
    if (gen !== socketGen) {
      connect(); // asked with a key the page has since replaced
      return;
    }
    setStream("offline");
    if (e instanceof DeskError && e.status === 401) {
      showError(e);
      return;
    }
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 10000);
    return;
  }
  connecting = false;
  if (gen !== socketGen) {
    // Dropped on purpose while the ticket came (a new key): that ticket is the old key's.
    connect();
    return;
  }
  if (socket || !socketWanted) return;
  const ws = new WebSocket(Desk.streamURL(t.ticket));
  socket = ws;
  ws.onopen = () => {
    backoff = 1000;
    setStream("live");
    scheduleRefresh();
  };
  ws.onmessage = (m) => {
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return;
    }
    logEvent(ev);
    if (ev.type === "trade.failed" && ev.payload) {
      showError(new Error(`Trade ${short(ev.payload.tradeId)} failed: ${ev.payload.reason}`));
    }
    scheduleRefresh();
  };
  ws.onclose = (c) => {
    if (socket !== ws) return; // a socket dropped on purpose or replaced: not ours to mend
    socket = null;
    setStream("offline");
    if (c.code === 4401) {
      showError(new DeskError(401, "", "the stream refused this API key", "GET", "/maker/stream"));
      return;
    }
    if (socketWanted) {
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    }
  };
}

/** Closes the stream socket on purpose: no reconnect, no error, for this one. */
function dropSocket() {
  socketGen++;
  if (!socket) return;
  const s = socket;
  socket = null;
  s.onclose = null;
  s.close(1000);
  setStream("offline");
}

function setStream(s) {
  const el = $("stream-state");
  el.textContent = s === "live" ? "stream live" : "stream offline";
  el.className = "badge " + s;
}

function logEvent(ev) {
  const list = $("events");
  const p = ev.payload || {};
  const what = p.rfqId ? `RFQ ${short(p.rfqId)}` : p.tradeId ? `trade ${short(p.tradeId)}` : p.actionId ? `action ${short(p.actionId)}` : "";
  list.prepend(h("li", {}, h("time", {}, new Date().toLocaleTimeString()), ` ${ev.type} ${what}${p.status ? " " + p.status : ""}`));
  while (list.children.length > MAX_EVENTS) list.lastChild.remove();
}

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => refresh().catch(showError), 150);
}

// ---- rendering ----

function render() {
  const known = !!me;
  $("signed-out").hidden = known;
  $("signed-in").hidden = !known;
  for (const id of ["wallet", "taker", "maker", "live"]) $(id).hidden = !known;
  $("whoami").textContent = known ? `${me.hint}` : "not registered";
  if (known) $("party-id").textContent = me.partyId;
}

async function refresh() {
  if (!me) return;
  const [bal, inbox, info, instruments, mine, trades, hist, incoming, pending, mtrades] = await Promise.all([
    desk.balances(), desk.incoming(), desk.desk(), desk.instruments(), desk.myRFQs(), desk.trades(),
    desk.history(), desk.incomingRFQs(), desk.pending(), desk.makerTrades(),
  ]);
  renderBalances(bal, inbox);
  renderMakers(info);
  renderInstruments(instruments);
  renderMyRFQs(mine);
  renderTrades($("trades"), trades);
  const done = awaiting && trades.find((t) => t.tradeId === awaiting && t.status === "settled");
  if (done) {
    awaiting = "";
    notice(`Trade ${short(done.tradeId)} settled: ledger update ${done.ledger.updateId}, ${(done.ledger.receiptCids || []).length} receipt(s).`);
  }
  renderHistory(hist);
  renderIncoming(incoming);
  renderPending(pending.actions);
  renderTrades($("maker-trades"), mtrades);
}

const lastData = new WeakMap();

/** Reports whether el already shows data (and remembers it), so a refresh that changes
 * nothing leaves the element, its focus and what is being typed alone. */
function unchanged(el, data) {
  const k = JSON.stringify(data);
  if (lastData.get(el) === k) return true;
  lastData.set(el, k);
  return false;
}

/**
 * Renders items into box as one element each, keyed: an element whose item (as shape gives
 * it) is unchanged is kept as it is, in place, with its focus and what is typed in it; a
 * changed or new one is built; a gone one is removed.
 */
function keyed(box, items, key, shape, build) {
  const old = new Map();
  for (const c of box.children) if (c.dataset.key) old.set(c.dataset.key, c);
  const next = items.map((it) => {
    const k = key(it);
    const prev = old.get(k);
    if (prev && unchanged(prev, shape(it))) return prev;
    const el = build(it);
    el.dataset.key = k;
    unchanged(el, shape(it));
    return el;
  });
  next.forEach((el, i) => {
    if (box.children[i] !== el) box.insertBefore(el, box.children[i] || null);
  });
  while (box.children.length > next.length) box.lastChild.remove();
}

function table(headers, rows, empty) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("div", { class: "scroll" }, h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, rows)));
}

function renderBalances(bal, inbox) {
  const rows = bal.holdings.map((x) => h("tr", {}, h("td", {}, x.displaySymbol), h("td", { class: "num", "data-symbol": x.symbol }, x.amount)));
  $("balances").replaceChildren(table(["Token", "Amount"], rows, "No holdings yet: draw from the faucet."));
  const box = $("deposits");
  if (!inbox.length) {
    box.replaceChildren();
    return;
  }
  const btn = h("button", { type: "button" }, `Accept and sign ${inbox.length} deposit(s)`);
  btn.addEventListener("click", action(btn, () => acceptDeposits(inbox)));
  box.replaceChildren(h("p", {}, `${inbox.length} deposit(s) waiting: `, btn));
}

function renderMakers(info) {
  const box = $("rfq-makers");
  if (unchanged(box, info)) return;
  const checked = new Set([...box.querySelectorAll("input:checked")].map((c) => c.value));
  const makers = info.makers.filter((m) => m !== me.hint);
  if (!makers.length) {
    box.replaceChildren(h("p", { class: "empty" }, "No maker is online right now."));
    return;
  }
  box.replaceChildren(...makers.map((m) => h("label", { class: "check" }, h("input", { type: "checkbox", value: m, checked: checked.has(m) }), " " + m)));
  $("fee").textContent = `Desk fee: ${info.feeBps} bps.`;
}

function renderInstruments(list) {
  for (const [id, pref] of [["rfq-base", 0], ["rfq-quote", 1]]) {
    const sel = $(id);
    if (sel.options.length === list.length) continue;
    const keep = sel.value;
    sel.replaceChildren(...list.map((x) => h("option", { value: x.symbol }, x.displaySymbol)));
    sel.value = keep || (list[pref] || list[0] || {}).symbol || "";
  }
}

function renderMyRFQs(rfqs) {
  const box = $("my-rfqs");
  if (unchanged(box, rfqs)) return;
  if (!rfqs.length) {
    box.replaceChildren(h("p", { class: "empty" }, "No open RFQ."));
    return;
  }
  keyed(box, rfqs, (r) => r.rfqId, (r) => r, (r) => {
    const quotes = (r.quotes || []).map((q) => {
      const btn = h("button", { type: "button", "aria-label": `Accept the quote of ${q.maker} at ${q.price}` }, "Accept");
      btn.addEventListener("click", action(btn, () => acceptQuote(q)));
      const live = r.open && q.status === "pending" && !q.settling;
      return h("tr", { class: "quote" }, h("td", {}, q.maker), h("td", { class: "num" }, q.price), h("td", {}, q.settling ? "settling" : q.status), h("td", {}, when(q.validUntil)), h("td", {}, live ? btn : ""));
    });
    const cancel = h("button", { type: "button", class: "secondary", "aria-label": `Cancel RFQ ${r.rfqId}` }, "Cancel RFQ");
    cancel.addEventListener("click", action(cancel, async () => { await desk.cancelRFQ(r.rfqId); notice(`RFQ ${short(r.rfqId)} cancelled.`); await refresh(); }));
    return h("article", { class: "card", "data-rfq": r.rfqId },
      h("h4", {}, `${r.direction} ${r.qty} ${r.base.toUpperCase()} for ${r.quote.toUpperCase()}`, " ", h("small", {}, `${r.open ? "open" : "closed"} until ${when(r.deadline)}`)),
      table(["Maker", "Price", "Status", "Valid until", ""], quotes, "Waiting for quotes…"),
      r.open ? cancel : "");
  });
}

function renderTrades(el, trades) {
  const rows = trades.map((t) => h("tr", { class: "trade", "data-status": t.status },
    h("td", {}, t.status), h("td", {}, `${t.direction} ${t.qty} ${t.base}`), h("td", { class: "num" }, `${t.price} ${t.quote}`),
    h("td", { class: "num" }, t.fee), h("td", { class: "mono", title: t.ledger.updateId }, short(t.ledger.updateId)),
    h("td", { class: "mono" }, (t.ledger.receiptCids || []).map(short).join(" ")), h("td", {}, when(t.settledAt))));
  el.replaceChildren(table(["Status", "Trade", "Price", "Fee", "Ledger update", "Receipts", "Settled"], rows, "No trades yet."));
}

function renderHistory(hist) {
  const rows = hist.map((x) => h("tr", {}, h("td", {}, x.kind), h("td", {}, `${x.direction} ${x.qty} ${x.base}/${x.quote}`), h("td", {}, String(x.quoteCount)), h("td", {}, x.reason || ""), h("td", {}, when(x.at))));
  $("history").replaceChildren(table(["Outcome", "RFQ", "Quotes", "Reason", "When"], rows, "Nothing yet."));
}

function renderIncoming(rfqs) {
  const box = $("incoming-rfqs");
  const open = rfqs.filter((r) => r.open || r.myQuote);
  if (unchanged(box, open)) return;
  if (!open.length) {
    box.replaceChildren(h("p", { class: "empty" }, "No RFQ for you right now."));
    return;
  }
  // Keep what the person is typing when an RFQ's card must be rebuilt.
  const typed = {};
  for (const i of box.querySelectorAll("input[data-rfq]")) typed[i.dataset.rfq] = i.value;
  // A card is rebuilt only when its RFQ changes; the quote's line changes in place, so the
  // price field and the buttons stay put while the quote is signed and anchored.
  keyed(box, open, (r) => r.rfqId, (r) => ({ ...r, myQuote: null }), (r) => {
    const id = `price-${r.rfqId}`;
    const input = h("input", { id, "data-rfq": r.rfqId, inputmode: "decimal", autocomplete: "off", placeholder: "price", value: typed[r.rfqId] || "" });
    const btn = h("button", { type: "button" }, "Quote");
    btn.addEventListener("click", action(btn, () => quote(r, input)));
    return h("article", { class: "card", "data-incoming": r.rfqId },
      h("h4", {}, `${r.taker.split("::")[0]} wants to ${r.direction === "SELL" ? "sell" : "buy"} ${r.qty} ${r.base.toUpperCase()} for ${r.quote.toUpperCase()}`, " ", h("small", {}, `${r.open ? "open" : "closed"} until ${when(r.deadline)}`)),
      r.open ? h("div", { class: "row" }, h("label", { for: id }, `Price (${r.quote.toUpperCase()} per ${r.base.toUpperCase()})`), input, btn) : "",
      h("div", { class: "myquote-slot" }));
  });
  for (const card of box.children) {
    const r = open.find((x) => x.rfqId === card.dataset.key);
    const slot = card.querySelector(".myquote-slot");
    if (!r || !slot || unchanged(slot, r.myQuote || null)) continue;
    const q = r.myQuote;
    if (!q) {
      slot.replaceChildren();
      continue;
    }
    const del = h("button", { type: "button", class: "secondary", "aria-label": `Delete my quote on RFQ ${r.rfqId}` }, "Delete quote");
    del.addEventListener("click", action(del, async () => { await desk.deleteQuote(q.quoteId); notice(`Quote ${short(q.quoteId)} deleted.`); await refresh(); }));
    slot.replaceChildren(h("p", { class: "myquote", "data-status": q.status }, `My quote: ${q.price} — ${q.settling ? "settling" : q.status}${q.status === "pending" && q.anchorCids && q.anchorCids.length ? " (anchored)" : ""} `, q.status === "pending" && !q.settling ? del : ""));
  }
}

function renderPending(actions) {
  $("pending-count").textContent = String(actions.length);
  $("sign-all").disabled = !actions.length;
  const rows = actions.map((a) => h("tr", {}, h("td", {}, a.purpose), h("td", {}, a.description), h("td", {}, when(a.expiresAt))));
  $("pending").replaceChildren(table(["Purpose", "What", "Expires"], rows, "Nothing waits for your signature."));
}

// ---- start ----

async function start() {
  for (const [id, fn] of [["register", register], ["restore", restore], ["backup", backup], ["recover", recoverKey], ["forget", forget],
    ["faucet", faucet], ["send-rfq", sendRFQ], ["sign-all", signPending], ["refresh", refresh]]) {
    const b = $(id);
    b.addEventListener("click", action(b, fn));
  }
  $("register-form").addEventListener("submit", (e) => e.preventDefault());
  try {
    me = (await store.load()) || null;
  } catch (e) {
    showError(new Error(`This browser does not let the page keep its key (IndexedDB: ${e.message || e})`));
  }
  if (me) desk.apiKey = me.apiKey;
  render();
  if (me) {
    connect();
    refresh().catch(showError);
  }
  setInterval(() => { if (me) refresh().catch(() => {}); }, 5000);
  document.body.dataset.ready = "1";
}

start();
