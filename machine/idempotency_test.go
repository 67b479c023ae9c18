package machine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// idem wraps a command with an Idempotency-Key as the transport does.
func idem(key, method, path, body string, cmd Command_) Idempotent {
	return Idempotent{Key: key, Method: method, Path: path, BodyHash: body, Cmd: cmd}
}

// replyJSON is what the transport would send for a reply: status, code and body.
func replyJSON(r Reply) string {
	if r.Err != nil {
		return strconv.Itoa(r.Status) + " " + r.Err.Code + " " + r.Err.Message
	}
	b, err := json.Marshal(r.Body)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return strconv.Itoa(r.Status) + " " + string(b)
}

// TestIdempotentReplay: a repeat with the same key, method, path and body answers the
// first answer again, byte for byte and marked replayed, and changes nothing; another
// body or path is 422; a malformed key 400; an unknown API key 401 whatever the key.
func TestIdempotentReplay(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	create := CreateRFQ{Req: houseTaker.req(), Direction: Buy, Qty: money.MustParse("1"), Base: "cbtc", Quote: "usdcx",
		InvitedMakers: []string{h.hint(m)}, TTLSeconds: 60}
	first := h.reply(h.apply(idem("k-1", "POST", "/rfq", "h1", create)))
	if first.Status != 200 || first.Replayed {
		t.Fatalf("first attempt: %+v", first)
	}
	rfqs := len(h.d.RFQs)
	before := h.digest()
	again := h.reply(h.apply(idem("k-1", "POST", "/rfq", "h1", create)))
	if !again.Replayed || replyJSON(again) != replyJSON(first) {
		t.Fatalf("repeat: %s (replayed %v), want %s", replyJSON(again), again.Replayed, replyJSON(first))
	}
	if len(h.d.RFQs) != rfqs || h.digest() != before {
		t.Fatal("the replay changed the desk")
	}
	for _, tc := range []struct {
		in     Idempotent
		status int
		code   string
	}{
		{idem("k-1", "POST", "/rfq", "h2", create), 422, CodeIdempotencyKeyReused},
		{idem("k-1", "DELETE", "/rfq/x", "h1", CancelRFQ{Req: houseTaker.req(), RFQID: "x"}), 422, CodeIdempotencyKeyReused},
		{idem("k 1", "POST", "/rfq", "h1", create), 400, ""},
		{idem(strings.Repeat("k", 65), "POST", "/rfq", "h1", create), 400, ""},
		{idem("k 1", "POST", "/rfq", "h1", CreateRFQ{Req: Req{KeyHash: keyHash("nobody")}}), 401, ""},
		{idem("k-9", "POST", "/maker/api-key/rotate", "h1", RotateKey{PartyID: m.id}), 400, ""},
	} {
		h.refused(h.apply(tc.in), tc.status, tc.code)
		if h.digest() != before {
			t.Fatalf("%+v changed the desk", tc.in)
		}
	}
	// The same key of another party is another record.
	other := h.reply(h.apply(idem("k-1", "DELETE", "/maker/quotes/q", "h1", DeleteQuote{Req: m.req(), QuoteID: "q"})))
	if other.Replayed || other.Status != 404 {
		t.Fatalf("another party's key: %+v", other)
	}
	// A refusal is recorded and replayed like a success.
	again = h.reply(h.apply(idem("k-1", "DELETE", "/maker/quotes/q", "h1", DeleteQuote{Req: m.req(), QuoteID: "q"})))
	if !again.Replayed || replyJSON(again) != replyJSON(other) {
		t.Fatalf("replayed refusal: %+v", again)
	}
}

// TestIdempotentInFlight: a repeat while the first attempt waits on the ledger is 409
// RETRY_LATER and changes nothing; once answered, a repeat replays that answer.
func TestIdempotentInFlight(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	_, quote := h.waitingSubmission(m, 120)
	sub := idem("q-1", "POST", "/maker/quotes", "h", quote)
	first := h.apply(sub)
	if _, ok := h.replies[first]; ok {
		t.Fatal("the submission was answered before the ledger")
	}
	quotes, before := len(h.d.Quotes), h.digest()
	h.refused(h.apply(sub), 409, CodeRetryLater)
	if len(h.d.Quotes) != quotes || h.digest() != before {
		t.Fatal("the repeat in flight changed the desk")
	}
	h.flush()
	got := h.reply(first)
	again := h.reply(h.apply(sub))
	if got.Status != 200 || !again.Replayed || replyJSON(again) != replyJSON(got) {
		t.Fatalf("after the answer: first %s, repeat %s", replyJSON(got), replyJSON(again))
	}
	if len(h.d.Quotes) != quotes {
		t.Fatal("the replay made a quote")
	}
}

// TestIdempotentBootAndRetention: a restart ends an unanswered keyed request without a
// record (a retry runs anew); a record older than the retention is gone too.
func TestIdempotentBootAndRetention(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	_, quote := h.waitingSubmission(m, 600)
	sub := idem("q-1", "POST", "/maker/quotes", "h", quote)
	h.apply(sub)
	h.queued = nil // the ledger's answers are lost with the process
	h.apply(Boot{})
	h.auto = true
	h.flush()
	if n := h.d.IdempotencyRecords(); n != 0 {
		t.Fatalf("%d records after the restart, want 0", n)
	}
	fresh := h.reply(h.apply(sub))
	if fresh.Replayed || fresh.Status != 200 {
		t.Fatalf("retry after the restart: %+v", fresh)
	}
	del := idem("d-1", "DELETE", "/maker/quotes/zz", "", DeleteQuote{Req: m.req(), QuoteID: "zz"})
	h.apply(del)
	h.now = h.now.Add(DefaultIdempotencyRetention - time.Second)
	if rep := h.reply(h.apply(del)); !rep.Replayed {
		t.Fatal("a record within the retention was not replayed")
	}
	h.now = h.now.Add(time.Second)
	if rep := h.reply(h.apply(del)); rep.Replayed {
		t.Fatal("a record past the retention was replayed")
	}
}

// TestIdempotentBound: a party keeps at most MaxIdempotencyKeysPerScope records, the
// oldest evicted first.
func TestIdempotentBound(t *testing.T) {
	h := newHarness(t)
	for i := 0; i <= MaxIdempotencyKeysPerScope; i++ {
		h.apply(idem("k"+strconv.Itoa(i), "DELETE", "/rfq/x", "", CancelRFQ{Req: houseTaker.req(), RFQID: "x"}))
	}
	if n := h.d.IdempotencyRecords(); n != MaxIdempotencyKeysPerScope {
		t.Fatalf("%d records, want %d", n, MaxIdempotencyKeysPerScope)
	}
	if h.reply(h.apply(idem("k0", "DELETE", "/rfq/x", "", CancelRFQ{Req: houseTaker.req(), RFQID: "x"}))).Replayed {
		t.Fatal("the oldest record was not evicted")
	}
	if !h.reply(h.apply(idem("k5", "DELETE", "/rfq/x", "", CancelRFQ{Req: houseTaker.req(), RFQID: "x"}))).Replayed {
		t.Fatal("a newer record was evicted")
	}
}

// TestIdempotentAddressScope: the unauthenticated registration calls are scoped by client
// address group, and the address groups are bounded.
func TestIdempotentAddressScope(t *testing.T) {
	h := newHarness(t)
	start := RegisterStart{DisplayName: "A", PublicKey: bytes.Repeat([]byte{1}, 32)}
	a := h.reply(h.apply(Idempotent{Key: "r", Address: "10.0.0.1", Method: "POST", Path: "/maker/register/start", BodyHash: "h", Cmd: start}))
	b := h.reply(h.apply(Idempotent{Key: "r", Address: "10.0.0.1", Method: "POST", Path: "/maker/register/start", BodyHash: "h", Cmd: start}))
	c := h.reply(h.apply(Idempotent{Key: "r", Address: "10.0.0.2", Method: "POST", Path: "/maker/register/start", BodyHash: "h", Cmd: start}))
	if a.Status != 200 || !b.Replayed || replyJSON(a) != replyJSON(b) || c.Replayed {
		t.Fatalf("by address: %v %v %v", a, b, c)
	}
	for i := 0; i < MaxIdempotencyAddressScopes+5; i++ {
		h.apply(Idempotent{Key: "c", Address: "a" + strconv.Itoa(i), Method: "POST", Path: "/maker/challenge", BodyHash: "h", Cmd: ChallengeRequest{PartyID: "p", Challenge: "x"}})
	}
	if n := len(h.d.Idem); n > MaxIdempotencyAddressScopes {
		t.Fatalf("%d address scopes, more than %d", n, MaxIdempotencyAddressScopes)
	}
}

// TestIdempotentJournalAndSnapshot: the wrapper survives its journal record; the records
// survive a snapshot, and a quiet replay of the journal builds the same records; a
// version 2 snapshot still restores, without records.
func TestIdempotentJournalAndSnapshot(t *testing.T) {
	in := idem("k", "POST", "/maker/quotes", "h", SubmitQuote{Req: Req{KeyHash: "kh"}, RFQID: "r", Price: money.MustParse("1.5")})
	in.Address = "a"
	b, err := EncodeEnvelope(Envelope{Seq: 3, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	env, err := DecodeEnvelope(b)
	if err != nil || mustJSON(t, env.Input) != mustJSON(t, in) {
		t.Fatalf("decoded %+v, %v", env.Input, err)
	}
	if _, err := EncodeEnvelope(Envelope{Seq: 3, Input: Idempotent{Key: "k", Cmd: in}}); err == nil {
		t.Fatal("a nested wrapper encoded")
	}

	h := newHarness(t)
	var log []Envelope
	h.log = &log
	m := h.maker("Alpha")
	r := h.ok(h.apply(idem("r", "POST", "/rfq", "h", CreateRFQ{Req: houseTaker.req(), Direction: Sell, Qty: money.MustParse("1"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{h.hint(m)}, TTLSeconds: 120})), 200).(RfqDTO)
	q := h.reply(h.apply(idem("q", "POST", "/maker/quotes", "h", SubmitQuote{Req: m.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}))).Body.(QuoteWithActionsDTO)
	h.ok(h.sign(m.id, m.key, q.Actions), 200)
	h.reply(h.apply(idem("a", "POST", "/quote/"+q.QuoteID+"/accept", "", AcceptQuote{Req: houseTaker.req(), QuoteID: q.QuoteID})))
	if h.d.IdempotencyRecords() != 3 {
		t.Fatalf("%d records", h.d.IdempotencyRecords())
	}
	back := roundTrip(t, h.d)
	if mustJSON(t, back.Idem) != mustJSON(t, h.d.Idem) {
		t.Fatal("the snapshot changed the records")
	}
	quiet, err := NewDesk(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		ApplyQuiet(quiet, e)
	}
	if quiet.digestOrFail(t) != h.digest() {
		t.Fatalf("a quiet replay built other records:\n%s\n%s", mustJSON(t, quiet.Idem), mustJSON(t, h.d.Idem))
	}

	_, d := restoreGolden(t, "snapshot-v2-rfqs.bin")
	if len(d.Idem) != 0 || len(d.Quotes) == 0 {
		t.Fatalf("version 2 snapshot: %d records, %d quotes", len(d.Idem), len(d.Quotes))
	}
	reencodes(t, d, 2)
}

func (d *Desk) digestOrFail(t *testing.T) [32]byte {
	t.Helper()
	s, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProperty_IdempotencyLaw: whatever the sequence of keyed and unkeyed writes and
// clock steps, a keyed write answers fresh the first time (and after its record expired),
// then the same answer replayed while the method, path and body match, and 422 when they
// do not; a replay or refusal changes nothing.
func TestProperty_IdempotencyLaw(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		type first struct {
			sig    string
			answer string
			at     time.Time
		}
		seen := map[string]first{}
		rfqs := []string{"none"}
		for i, n := 0, rapid.IntRange(1, 40).Draw(t, "steps"); i < n; i++ {
			if rapid.IntRange(0, 9).Draw(t, "advance") == 0 {
				h.advance(time.Duration(rapid.IntRange(1, 30).Draw(t, "hours")) * time.Hour)
			}
			var cmd Command_
			var path, body string
			switch rapid.IntRange(0, 2).Draw(t, "cmd") {
			case 0:
				qty := rapid.SampledFrom([]string{"1", "2"}).Draw(t, "qty")
				cmd = CreateRFQ{Req: houseTaker.req(), Direction: Buy, Qty: money.MustParse(qty), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{}, TTLSeconds: 60}
				path, body = "/rfq", qty
			case 1:
				id := rapid.SampledFrom(rfqs).Draw(t, "rfq")
				cmd, path = CancelRFQ{Req: houseTaker.req(), RFQID: id}, "/rfq/"+id
			default:
				cmd, path = FaucetDraw{Req: houseTaker.req()}, "/faucet"
			}
			key := rapid.SampledFrom([]string{"", "a", "b", "c"}).Draw(t, "key")
			if key == "" {
				rep := h.reply(h.apply(cmd))
				if b, ok := rep.Body.(RfqDTO); ok {
					rfqs = append(rfqs, b.RfqID)
				}
				continue
			}
			before := h.digest()
			rep := h.reply(h.apply(idem(key, "X", path, body, cmd)))
			sig := path + "|" + body
			f, ok := seen[key]
			switch {
			case !ok || h.now.Sub(f.at) >= DefaultIdempotencyRetention:
				if rep.Replayed {
					t.Fatalf("first use of %q replayed", key)
				}
				if transientAnswer(rep.Status, rep.Err) {
					delete(seen, key) // not recorded: the key runs anew
				} else {
					seen[key] = first{sig, replyJSON(rep), h.now}
				}
				if b, ok := rep.Body.(RfqDTO); ok {
					rfqs = append(rfqs, b.RfqID)
				}
			case f.sig != sig:
				if rep.Status != 422 || rep.Err.Code != CodeIdempotencyKeyReused {
					t.Fatalf("reuse of %q with another request: %+v", key, rep)
				}
			default:
				if !rep.Replayed || replyJSON(rep) != f.answer {
					t.Fatalf("repeat of %q: %s, want %s replayed", key, replyJSON(rep), f.answer)
				}
			}
			if ok && h.now.Sub(f.at) < DefaultIdempotencyRetention && h.digest() != before {
				t.Fatal("a repeat changed the desk")
			}
		}
	})
}

// TestIdempotentRecordEveryCommand: a wrapper around any command kind, every field drawn,
// survives its journal record unchanged and re-encodes to the same bytes.
func TestIdempotentRecordEveryCommand(t *testing.T) {
	var cmds []Input
	for _, in := range allInputs() {
		if _, ok := in.(Command_); ok {
			cmds = append(cmds, in)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		proto := cmds[rapid.IntRange(0, len(cmds)-1).Draw(t, "kind")]
		p := reflect.New(reflect.TypeOf(proto))
		fill(t, p.Elem(), proto.Kind())
		var w Idempotent
		fill(t, reflect.ValueOf(&w).Elem(), "wrapper")
		w.Cmd = p.Elem().Interface().(Command_)
		b, err := EncodeEnvelope(Envelope{Seq: 9, Input: w})
		if err != nil {
			t.Fatal(err)
		}
		env, err := DecodeEnvelope(b)
		if err != nil || toJSON(t, env.Input) != toJSON(t, w) || reflect.TypeOf(env.Input.(Idempotent).Cmd) != reflect.TypeOf(w.Cmd) {
			t.Fatalf("decoded %+v, %v; want %+v", env.Input, err, w)
		}
		again, err := EncodeEnvelope(env)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoded record differs (%v)", err)
		}
	})
}

// TestIdempotentTransientNotRecorded: an answer that asks for a retry (here 409
// RETRY_LATER, a withdrawal blocked by a settling trade, and 501 where no withdrawal runs)
// is not recorded, so the same key runs anew.
func TestIdempotentTransientNotRecorded(t *testing.T) {
	if !transientAnswer(409, &APIError{Status: 409, Code: CodeRetryLater}) || !transientAnswer(503, nil) ||
		!transientAnswer(429, &APIError{Status: 429}) || transientAnswer(409, &APIError{Status: 409}) || transientAnswer(404, &APIError{Status: 404}) {
		t.Fatal("transientAnswer misjudges")
	}
	cfg := testConfig()
	cfg.Network = Sandbox // withdrawals answer 501
	h := newHarnessWith(t, cfg)
	in := idem("w", "POST", "/wallet/withdraw", "h", Withdraw{Req: houseTaker.req(), Symbol: "cbtc", Amount: money.MustParse("1"), Receiver: "x::1220aa"})
	first := h.reply(h.apply(in))
	if first.Status < 500 {
		t.Fatalf("withdraw on the sandbox: %+v", first)
	}
	if n := h.d.IdempotencyRecords(); n != 0 {
		t.Fatalf("%d records after a %d", n, first.Status)
	}
	if again := h.reply(h.apply(in)); again.Replayed {
		t.Fatal("a 5xx was replayed")
	}
}

// TestIdempotentFlowAcrossRestart: a keyed write whose flow carries on after a restart (a
// house party's withdrawal, submitted at once) is never run twice by a retry of its key: while
// its re-issued ledger call is out the retry is 409 RETRY_LATER, with no second transfer;
// once the call answers, the retry replays that answer. If the flow ends without taking
// effect (the ledger refuses the re-issued call), the key runs anew. A review found the
// record dropped at boot and a second withdrawal sent.
func TestIdempotentFlowAcrossRestart(t *testing.T) {
	transfers := func(calls []LedgerCall) int {
		n := 0
		for _, c := range calls {
			if c.Command != nil && c.Command.Transfer != nil {
				n++
			}
		}
		return n
	}
	for _, refused := range []bool{false, true} {
		h := newHarness(t)
		in := idem("w-1", "POST", "/wallet/withdraw", "h", Withdraw{Req: houseTaker.req(), Symbol: "cbtc", Amount: money.MustParse("0.5"), Receiver: "x::1220aa"})
		h.auto = false
		first := h.apply(in)
		if _, ok := h.replies[first]; ok {
			t.Fatalf("answered before the ledger: %+v", h.replies[first])
		}
		h.queued = nil // the crash: the call's answer never comes
		h.apply(Boot{})
		if n := transfers(h.queued); n != 1 {
			t.Fatalf("boot re-issued %d transfers, want the one in flight", n)
		}
		// The retry while the re-issued transfer is out: not run again.
		h.refused(h.apply(in), 409, CodeRetryLater)
		if n := transfers(h.queued); n != 1 {
			t.Fatalf("a retry during the flow sent %d transfers in all, want 1", n)
		}
		if refused {
			h.ledger.failNext(LedgerRejected, func(c LedgerCall) bool { return c.Command != nil && c.Command.Transfer != nil })
		}
		h.drain()
		h.auto = true
		again := h.apply(in)
		rep := h.reply(again)
		if refused {
			// Nothing took effect: the key ran anew, a second attempt of the withdrawal.
			if rep.Replayed {
				t.Fatalf("after a refused flow the retry is replayed: %s", replyJSON(rep))
			}
			continue
		}
		if !rep.Replayed || rep.Status != 200 {
			t.Fatalf("after the flow's answer the retry is %s (replayed %v), want the withdrawal's 200 again", replyJSON(rep), rep.Replayed)
		}
		if n := transfers(h.queued); n != 0 {
			t.Fatalf("the replayed retry sent %d transfers", n)
		}
	}
}
