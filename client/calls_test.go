package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

const testKey = "mk_test_key"

// Wire fixtures, written as the desk writes them.
const (
	rfqJSON = `{"rfqId":"rfq_1","taker":"alice-abc123","direction":"SELL","qty":"1.5","base":"btc","quote":"usdcx",` +
		`"deadline":"2025-01-02T03:04:05Z","invitedMakers":["bob-def456"],"feeBps":10,"open":true}`
	quoteJSON = `{"quoteId":"q_1","rfqId":"rfq_1","maker":"bob-def456","price":"100000.25","validUntil":"2025-01-02T03:04:00Z",` +
		`"status":"pending","settling":false,"anchorCids":["00ab"]}`
	tradeJSON = `{"tradeId":"t_1","taker":"alice-abc123","maker":"bob-def456","direction":"SELL","qty":"1.5","base":"btc",` +
		`"quote":"usdcx","price":"100000.25","fee":"150.000375","settledAt":"2025-01-02T03:04:06Z","status":"settled",` +
		`"ledger":{"updateId":"1220aa","receiptCids":["00cd","00ef"]}}`
	actionJSON = `{"id":"act_1","kind":"hash","purpose":"allocate","description":"lock 1.5 btc",` +
		`"hash":"3q2+7w==","tradeId":"t_1","createdAt":"2025-01-02T03:00:00Z","expiresAt":"2025-01-02T03:10:00Z"}`
	historyJSON = `{"id":"h_1","rfqId":"rfq_2","direction":"BUY","qty":"2","base":"btc","quote":"usdcx","kind":"expired",` +
		`"quoteCount":1,"bestPrice":"99000","maker":"bob-def456","reason":"deadline passed","at":"2025-01-02T03:05:00Z"}`
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

var (
	wantRFQ = RFQ{RFQID: "rfq_1", Taker: "alice-abc123", Direction: Sell, Qty: "1.5", Base: "btc", Quote: "usdcx",
		Deadline: mustTime("2025-01-02T03:04:05Z"), InvitedMakers: []string{"bob-def456"}, FeeBps: 10, Open: true}
	wantQuote = Quote{QuoteID: "q_1", RFQID: "rfq_1", Maker: "bob-def456", Price: "100000.25",
		ValidUntil: mustTime("2025-01-02T03:04:00Z"), Status: QuotePending, AnchorCIDs: []string{"00ab"}}
	wantTrade = Trade{TradeID: "t_1", Taker: "alice-abc123", Maker: "bob-def456", Direction: Sell, Qty: "1.5", Base: "btc",
		Quote: "usdcx", Price: "100000.25", Fee: "150.000375", SettledAt: mustTime("2025-01-02T03:04:06Z"), Status: TradeSettled,
		Ledger: LedgerProof{UpdateID: "1220aa", ReceiptCIDs: []string{"00cd", "00ef"}}}
	wantAction = SignAction{ID: "act_1", Kind: "hash", Purpose: PurposeAllocate, Description: "lock 1.5 btc", Hash: "3q2+7w==",
		TradeID: "t_1", CreatedAt: mustTime("2025-01-02T03:00:00Z"), ExpiresAt: mustTime("2025-01-02T03:10:00Z")}
	wantHistory = RFQHistory{ID: "h_1", RFQID: "rfq_2", Direction: Buy, Qty: "2", Base: "btc", Quote: "usdcx", Kind: HistoryExpired,
		QuoteCount: 1, BestPrice: "99000", Maker: "bob-def456", Reason: "deadline passed", At: mustTime("2025-01-02T03:05:00Z")}
)

// callCase is one REST call: what the client must send and what it must make of the answer.
type callCase struct {
	name     string
	call     func(ctx context.Context, c *Client) (any, error)
	method   string
	path     string // escaped path
	query    string // exact raw query, "" for none
	auth     bool   // X-API-Key expected (else it must be absent)
	reqBody  string // expected JSON body, "" for no body at all
	status   int
	respBody string
	want     any
}

func TestCalls(t *testing.T) {
	rfqWithQuotes := wantRFQ
	rfqWithQuotes.Quotes = []Quote{wantQuote}
	rfqWithDeclines := rfqWithQuotes
	rfqWithDeclines.Declines = []Decline{{Maker: "carol-123abc", Reason: DeclineSize}}
	rfqIncoming := wantRFQ
	rfqIncoming.MyQuote = &wantQuote
	rfqIncomingNone := wantRFQ
	rfqIncomingNone.RFQID = "rfq_3"
	settling := wantTrade
	settling.Status, settling.SettledAt, settling.Fee = TradeSettling, time.Time{}, "150.000375"
	settling.Ledger = LedgerProof{}

	cases := []callCase{
		{
			name: "register start",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.RegisterStart(ctx, RegisterStartRequest{DisplayName: "Bob Bot", PublicKey: "AAAA"})
			},
			method: "POST", path: "/maker/register/start",
			reqBody:  `{"displayName":"Bob Bot","publicKey":"AAAA"}`,
			status:   200,
			respBody: `{"registrationId":"reg_1","partyId":"bob-bot-x1y2z3::1220ab","topology":[{"hash":"3q2+7w==","description":"party"},{"hash":"AQID","description":"hosting"}]}`,
			want: &RegisterStartResponse{RegistrationID: "reg_1", PartyID: "bob-bot-x1y2z3::1220ab",
				Topology: []TopologyTx{{Hash: "3q2+7w==", Description: "party"}, {Hash: "AQID", Description: "hosting"}}},
		},
		{
			name: "register complete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.RegisterComplete(ctx, RegisterCompleteRequest{RegistrationID: "reg_1", Signatures: []string{"c2ln", "c2lnMg=="}})
			},
			method: "POST", path: "/maker/register/complete",
			reqBody:  `{"registrationId":"reg_1","signatures":["c2ln","c2lnMg=="]}`,
			status:   200,
			respBody: `{"apiKey":"mk_new","partyId":"bob::1220ab","hint":"bob-x1y2z3","actions":[]}`,
			want:     &RegisterCompleteResponse{APIKey: "mk_new", PartyID: "bob::1220ab", Hint: "bob-x1y2z3", Actions: []SignAction{}},
		},
		{
			name:   "challenge",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Challenge(ctx, "bob::1220ab") },
			method: "POST", path: "/maker/challenge",
			reqBody: `{"partyId":"bob::1220ab"}`, status: 200, respBody: `{"challenge":"ch_xyz"}`,
			want: "ch_xyz",
		},
		{
			name: "rotate",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.RotateAPIKey(ctx, RotateRequest{PartyID: "bob::1220ab", Challenge: "ch_xyz", Signature: "c2ln"})
			},
			method: "POST", path: "/maker/api-key/rotate",
			reqBody: `{"partyId":"bob::1220ab","challenge":"ch_xyz","signature":"c2ln"}`, status: 200,
			respBody: `{"apiKey":"mk_rotated"}`, want: "mk_rotated",
		},
		{
			name:   "status",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Status(ctx) },
			method: "GET", path: "/maker/status", auth: true, status: 200,
			respBody: `{"partyId":"bob::1220ab","hint":"bob-x1y2z3","invitable":true,"pendingActions":2,"serviceActivated":true}`,
			want:     &MakerStatus{PartyID: "bob::1220ab", Hint: "bob-x1y2z3", Invitable: true, PendingActions: 2, ServiceActivated: true},
		},
		{
			name:   "preapproval",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.Preapproval(ctx) },
			method: "POST", path: "/maker/preapproval", auth: true, status: 200, respBody: `{"ok":true}`,
		},
		{
			name: "submit quote without validUntil",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.SubmitQuote(ctx, QuoteRequest{RFQID: "rfq_1", Price: "100000.25"})
			},
			method: "POST", path: "/maker/quotes", auth: true,
			reqBody: `{"rfqId":"rfq_1","price":"100000.25"}`, status: 200,
			respBody: quoteJSON[:len(quoteJSON)-1] + `,"actions":[` + actionJSON + `]}`,
			want:     &QuoteWithActions{Quote: wantQuote, Actions: []SignAction{wantAction}},
		},
		{
			name: "submit quote with validUntil",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.SubmitQuote(ctx, QuoteRequest{RFQID: "rfq_1", Price: "3", ValidUntil: mustTime("2025-01-02T03:04:00Z")})
			},
			method: "POST", path: "/maker/quotes", auth: true,
			reqBody: `{"rfqId":"rfq_1","price":"3","validUntil":"2025-01-02T03:04:00Z"}`, status: 200,
			respBody: quoteJSON[:len(quoteJSON)-1] + `,"actions":[]}`,
			want:     &QuoteWithActions{Quote: wantQuote, Actions: []SignAction{}},
		},
		{
			name:   "cancel quote",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.CancelQuote(ctx, "q_1/x") },
			method: "DELETE", path: "/maker/quotes/q_1%2Fx", auth: true, status: 204,
		},
		{
			name:   "cancel all quotes",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.CancelAllQuotes(ctx) },
			method: "DELETE", path: "/maker/quotes", auth: true, status: 200,
			respBody: `{"revoked":["q_1","q_2"],"settling":["q_3"]}`,
			want:     &CancelledQuotes{Revoked: []string{"q_1", "q_2"}, Settling: []string{"q_3"}},
		},
		{
			name: "decline rfq",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeclineRFQ(ctx, "rfq_1/x", DeclineSize)
			},
			method: "POST", path: "/maker/rfq/rfq_1%2Fx/decline", auth: true, reqBody: `{"reason":"size"}`, status: 204,
		},
		{
			name:   "maker trades default limit",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.MakerTrades(ctx, 0) },
			method: "GET", path: "/maker/trades", auth: true, status: 200, respBody: `[` + tradeJSON + `]`,
			want: []Trade{wantTrade},
		},
		{
			name:   "maker trades limit",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.MakerTrades(ctx, 500) },
			method: "GET", path: "/maker/trades", query: "limit=500", auth: true, status: 200, respBody: `[]`,
			want: []Trade{},
		},
		{
			name:   "incoming rfqs",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.IncomingRFQs(ctx) },
			method: "GET", path: "/rfq/incoming", auth: true, status: 200,
			respBody: `[` + rfqJSON[:len(rfqJSON)-1] + `,"myQuote":` + quoteJSON + `},` +
				`{"rfqId":"rfq_3"` + rfqJSON[len(`{"rfqId":"rfq_1"`):len(rfqJSON)-1] + `,"myQuote":null}]`,
			want: []RFQ{rfqIncoming, rfqIncomingNone},
		},
		{
			name: "reference price",
			call: func(ctx context.Context, c *Client) (any, error) {
				p, ok, err := c.ReferencePrice(ctx, "BTC", "usdcx")
				return []any{p, ok}, err
			},
			method: "GET", path: "/maker/reference-price", query: "base=BTC&quote=usdcx", auth: true, status: 200,
			respBody: `{"price":"100000"}`, want: []any{Decimal("100000"), true},
		},
		{
			name: "reference price null",
			call: func(ctx context.Context, c *Client) (any, error) {
				p, ok, err := c.ReferencePrice(ctx, "btc", "eth")
				return []any{p, ok}, err
			},
			method: "GET", path: "/maker/reference-price", query: "base=btc&quote=eth", auth: true, status: 200,
			respBody: `{"price":null}`, want: []any{Decimal(""), false},
		},
		{
			name: "create rfq",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.CreateRFQ(ctx, CreateRFQRequest{Direction: Sell, Qty: "1.5", Base: "BTC", Quote: "usdcx",
					InvitedMakers: []string{"bob-def456"}, TTLSeconds: 60})
			},
			method: "POST", path: "/rfq", auth: true,
			reqBody: `{"direction":"SELL","qty":"1.5","base":"BTC","quote":"usdcx","invitedMakers":["bob-def456"],"ttlSeconds":60}`,
			status:  200, respBody: rfqJSON, want: &wantRFQ,
		},
		{
			name:   "my rfqs",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.MyRFQs(ctx) },
			method: "GET", path: "/rfq/mine", auth: true, status: 200,
			respBody: `[` + rfqJSON[:len(rfqJSON)-1] + `,"quotes":[` + quoteJSON + `],"declines":[{"maker":"carol-123abc","reason":"size"}]}]`,
			want:     []RFQ{rfqWithDeclines},
		},
		{
			name:   "cancel rfq",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.CancelRFQ(ctx, "rfq_1") },
			method: "DELETE", path: "/rfq/rfq_1", auth: true, status: 204,
		},
		{
			name:   "rfq history",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.RFQHistory(ctx, 7) },
			method: "GET", path: "/rfq-history", query: "limit=7", auth: true, status: 200,
			respBody: `[` + historyJSON + `]`, want: []RFQHistory{wantHistory},
		},
		{
			name:   "accept quote",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.AcceptQuote(ctx, "q_1") },
			method: "POST", path: "/quote/q_1/accept", auth: true, status: 202,
			respBody: `{"tradeId":"t_1","taker":"alice-abc123","maker":"bob-def456","direction":"SELL","qty":"1.5","base":"btc",` +
				`"quote":"usdcx","price":"100000.25","fee":"150.000375","settledAt":null,"status":"settling","ledger":{"updateId":"","receiptCids":null},` +
				`"actions":[` + actionJSON + `]}`,
			want: &TradeWithActions{Trade: settling, Actions: []SignAction{wantAction}},
		},
		{
			name:   "trades",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Trades(ctx, 1) },
			method: "GET", path: "/trades", query: "limit=1", auth: true, status: 200,
			respBody: `[` + tradeJSON + `]`, want: []Trade{wantTrade},
		},
		{
			name:   "desk",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Desk(ctx) },
			method: "GET", path: "/desk", auth: true, status: 200,
			respBody: `{"feeBps":10,"feeTiers":[{"minNotionalUsd":"0","feeBps":10},{"minNotionalUsd":"100000","feeBps":5}],"makers":["bob-def456"]}`,
			want: &DeskInfo{FeeBps: 10, FeeTiers: []FeeTier{{MinNotionalUSD: "0", FeeBps: 10}, {MinNotionalUSD: "100000", FeeBps: 5}},
				Makers: []string{"bob-def456"}},
		},
		{
			name:   "config",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Config(ctx) },
			method: "GET", path: "/config", auth: true, status: 200,
			respBody: `{"network":"testnet","minNotionalUsd":"10","quoteLifetimeSeconds":30,"minTtlSeconds":5,"maxTtlSeconds":3600,` +
				`"actionLifetimeSeconds":600,"maxBatch":50,"futureField":true}`,
			want: &DeskConfig{Network: "testnet", MinNotionalUSD: "10", QuoteLifetimeSeconds: 30, MinTTLSeconds: 5, MaxTTLSeconds: 3600,
				ActionLifetimeSeconds: 600, MaxBatch: 50},
		},
		{
			name:   "instruments",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Instruments(ctx) },
			method: "GET", path: "/instruments", auth: true, status: 200,
			respBody: `[{"symbol":"btc","displaySymbol":"BTC","decimals":8,"logoUrl":"https://x/btc.png"}]`,
			want:     []Instrument{{Symbol: "btc", DisplaySymbol: "BTC", Decimals: 8, LogoURL: "https://x/btc.png"}},
		},
		{
			name:   "balances",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Balances(ctx) },
			method: "GET", path: "/balances", auth: true, status: 200,
			respBody: `{"party":"bob-def456","holdings":[{"symbol":"btc","displaySymbol":"BTC","amount":"0.0000000001"}]}`,
			want:     &Balances{Party: "bob-def456", Holdings: []Holding{{Symbol: "btc", DisplaySymbol: "BTC", Amount: "0.0000000001"}}},
		},
		{
			name:   "holdings",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Holdings(ctx) },
			method: "GET", path: "/wallet/holdings", auth: true, status: 200,
			respBody: `{"party":"bob-def456","holdings":[]}`, want: &Balances{Party: "bob-def456", Holdings: []Holding{}},
		},
		{
			name:   "incoming transfers",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.IncomingTransfers(ctx) },
			method: "GET", path: "/wallet/incoming", auth: true, status: 200,
			respBody: `{"transfers":[{"cid":"00aa","symbol":"cc","displaySymbol":"CC","amount":"10","sender":"faucet-000001","instrumentId":"Amulet"}]}`,
			want:     []IncomingTransfer{{CID: "00aa", Symbol: "cc", DisplaySymbol: "CC", Amount: "10", Sender: "faucet-000001", InstrumentID: "Amulet"}},
		},
		{
			name:   "accept transfer",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.AcceptTransfer(ctx, "00aa") },
			method: "POST", path: "/wallet/incoming/00aa/accept", auth: true, status: 202,
			respBody: `{"actions":[` + actionJSON + `]}`, want: []SignAction{wantAction},
		},
		{
			name: "withdraw",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Withdraw(ctx, WithdrawRequest{Symbol: "BTC", Amount: "0.5", Receiver: "carol::1220cd"})
			},
			method: "POST", path: "/wallet/withdraw", auth: true,
			reqBody: `{"symbol":"BTC","amount":"0.5","receiver":"carol::1220cd"}`, status: 202,
			respBody: `{"actions":[]}`, want: []SignAction{},
		},
		{
			name:   "faucet info",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.FaucetInfo(ctx) },
			method: "GET", path: "/faucet", auth: true, status: 200,
			respBody: `{"enabled":true,"retryAfterSeconds":0,"drip":[{"symbol":"cc","displaySymbol":"CC","amount":"100"}]}`,
			want:     &FaucetInfo{Enabled: true, Drip: []FaucetToken{{Symbol: "cc", DisplaySymbol: "CC", Amount: "100"}}},
		},
		{
			name:   "faucet draw",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Faucet(ctx) },
			method: "POST", path: "/faucet", auth: true, status: 200,
			respBody: `{"sent":[{"symbol":"cc","displaySymbol":"CC","amount":"100"}],"skipped":[{"symbol":"btc","reason":"cooldown"}],"retryAfterSeconds":3600}`,
			want: &FaucetDraw{Sent: []FaucetToken{{Symbol: "cc", DisplaySymbol: "CC", Amount: "100"}},
				Skipped: []FaucetSkip{{Symbol: "btc", Reason: "cooldown"}}, RetryAfterSeconds: 3600},
		},
		{
			name:   "pending actions",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.PendingActions(ctx) },
			method: "GET", path: "/tx/pending", auth: true, status: 200,
			respBody: `{"actions":[` + actionJSON + `]}`, want: []SignAction{wantAction},
		},
		{
			name:   "execute singular",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.Execute(ctx, "act_1", "c2ln") },
			method: "POST", path: "/tx/execute", auth: true,
			reqBody: `{"actionId":"act_1","signature":"c2ln"}`, status: 200, respBody: `{"ok":true}`,
		},
		{
			name: "execute batch",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.ExecuteBatch(ctx, []ActionSignature{{ActionID: "act_1", Signature: "c2ln"}, {ActionID: "act_2", Signature: "c2lnMg=="}})
			},
			method: "POST", path: "/tx/execute", auth: true,
			reqBody: `{"signatures":[{"actionId":"act_1","signature":"c2ln"},{"actionId":"act_2","signature":"c2lnMg=="}]}`,
			status:  200,
			respBody: `{"results":[{"actionId":"act_1","status":"executed"},` +
				`{"actionId":"act_2","status":"error","error":"contract gone","retryable":false}]}`,
			want: []ExecuteResult{{ActionID: "act_1", Status: ExecExecuted}, {ActionID: "act_2", Status: ExecError, Error: "contract gone"}},
		},
		{
			name: "raw Do",
			call: func(ctx context.Context, c *Client) (any, error) {
				var out map[string]any
				err := c.Do(ctx, "POST", "/maker/quotes", []byte(`{"rfqId":"rfq_1","price":"1e5"}`), &out)
				return out, err
			},
			method: "POST", path: "/maker/quotes", auth: true,
			reqBody: `{"rfqId":"rfq_1","price":"1e5"}`, status: 200, respBody: `{"x":1}`,
			want: map[string]any{"x": 1.0},
		},
	}
	runCallCases(t, cases)
}

// runCallCases runs each case as a subtest against a fake desk that checks the request
// (checkRequest) and answers the case's status and body; the call must succeed and, when
// the case wants a value, decode to it.
func runCallCases(t *testing.T, cases []callCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				checkRequest(t, tc, r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.respBody)
			}))
			defer srv.Close()
			c, err := New(srv.URL+"/", WithAPIKey(testKey))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// checkRequest is the fake desk's strictness: method, path, query, headers and body.
func checkRequest(t *testing.T, tc callCase, r *http.Request) {
	t.Helper()
	if r.Method != tc.method || r.URL.EscapedPath() != tc.path {
		t.Errorf("request %s %s, want %s %s", r.Method, r.URL.EscapedPath(), tc.method, tc.path)
	}
	if r.URL.RawQuery != tc.query {
		t.Errorf("query %q, want %q", r.URL.RawQuery, tc.query)
	}
	key, has := r.Header[http.CanonicalHeaderKey(APIKeyHeader)]
	switch {
	case tc.auth && (!has || len(key) != 1 || key[0] != testKey):
		t.Errorf("X-API-Key %q, want %q", key, testKey)
	case !tc.auth && has:
		t.Errorf("X-API-Key sent on an unauthenticated call")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if tc.reqBody == "" {
		if len(body) != 0 {
			t.Errorf("body %q, want none", body)
		}
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var got, want any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	dec = json.NewDecoder(bytes.NewReader([]byte(tc.reqBody)))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("test body: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body\n got %s\nwant %s", body, tc.reqBody)
	}
}
