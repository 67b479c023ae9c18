// api.js: the desk's REST API from the page (same origin), its refusals as DeskError with
// the HTTP status, the desk's `code` and a sentence in the person's terms, and the stream
// through a one-shot ticket (a browser's WebSocket cannot send X-API-Key).

/** A refusal or failure of a desk call. */
export class DeskError extends Error {
  constructor(status, code, message, method, path) {
    super(message);
    this.status = status;
    this.code = code || "";
    this.method = method;
    this.path = path;
  }

  /** What happened, in the person's terms, then the status and code. */
  explain() {
    const plain = EXPLAIN[this.code] || BY_STATUS[this.status] || "The desk refused this";
    const tech = this.status ? `HTTP ${this.status}${this.code ? " " + this.code : ""}` : "no answer";
    return `${plain}: ${this.message} (${tech})`;
  }
}

const EXPLAIN = {
  INSUFFICIENT_FUNDS: "Not enough funds for this",
  BELOW_MIN_NOTIONAL: "This trade is too small for the desk",
  DUST_TRADE: "This trade is too small to settle",
  RETRY_LATER: "The desk is busy; try again in a moment",
  MMP_FROZEN: "Your maker protection has paused quoting (reset it or wait)",
  IDEMPOTENCY_KEY_REUSED: "This request was already sent with different contents",
};

const BY_STATUS = {
  0: "The desk cannot be reached",
  400: "The desk did not accept what was entered",
  401: "The desk does not know this API key (restore a backup or recover the key)",
  403: "This is not allowed for your party",
  404: "Not found (it may have expired or been withdrawn)",
  409: "This conflicts with the current state (it may have just changed)",
  410: "This has expired",
  422: "The desk could not process this",
  429: "Too many requests; wait a moment",
  501: "This desk does not offer that",
  503: "The desk is not ready; try again shortly",
};

/** A client of the desk at the page's own origin; apiKey may be set later. */
export class Desk {
  constructor(apiKey = "") {
    this.apiKey = apiKey;
  }

  async call(method, path, body, keyed = true) {
    const headers = {};
    if (keyed) headers["X-API-Key"] = this.apiKey;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
    } catch (e) {
      throw new DeskError(0, "", String(e.message || e), method, path);
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!res.ok) {
      const msg = data && typeof data.error === "string" ? data.error : text.slice(0, 200) || res.statusText;
      throw new DeskError(res.status, data && data.code, msg, method, path);
    }
    return data;
  }

  registerStart(displayName, publicKey) {
    return this.call("POST", "/maker/register/start", { displayName, publicKey }, false);
  }
  registerComplete(registrationId, signatures) {
    return this.call("POST", "/maker/register/complete", { registrationId, signatures }, false);
  }
  challenge(partyId) {
    return this.call("POST", "/maker/challenge", { partyId }, false);
  }
  rotate(partyId, challenge, signature) {
    return this.call("POST", "/maker/api-key/rotate", { partyId, challenge, signature }, false);
  }
  status() { return this.call("GET", "/maker/status"); }
  desk() { return this.call("GET", "/desk"); }
  instruments() { return this.call("GET", "/instruments"); }
  balances() { return this.call("GET", "/balances"); }
  faucet() { return this.call("POST", "/faucet"); }
  async incoming() { return (await this.call("GET", "/wallet/incoming")).transfers; }
  acceptIncoming(cid) { return this.call("POST", `/wallet/incoming/${encodeURIComponent(cid)}/accept`); }
  pending() { return this.call("GET", "/tx/pending"); }
  execute(signatures) { return this.call("POST", "/tx/execute", { signatures }); }
  createRFQ(req) { return this.call("POST", "/rfq", req); }
  myRFQs() { return this.call("GET", "/rfq/mine"); }
  cancelRFQ(id) { return this.call("DELETE", `/rfq/${encodeURIComponent(id)}`); }
  history() { return this.call("GET", "/rfq-history?limit=20"); }
  accept(quoteId) { return this.call("POST", `/quote/${encodeURIComponent(quoteId)}/accept`); }
  trades() { return this.call("GET", "/trades?limit=20"); }
  incomingRFQs() { return this.call("GET", "/rfq/incoming"); }
  submitQuote(rfqId, price) { return this.call("POST", "/maker/quotes", { rfqId, price }); }
  deleteQuote(id) { return this.call("DELETE", `/maker/quotes/${encodeURIComponent(id)}`); }
  makerTrades() { return this.call("GET", "/maker/trades?limit=20"); }
  ticket() { return this.call("POST", "/maker/stream/ticket"); }

  /** The stream's URL for a ticket, on the page's own host (ws: or wss:). */
  static streamURL(ticket) {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/maker/stream?ticket=${encodeURIComponent(ticket)}`;
  }
}
