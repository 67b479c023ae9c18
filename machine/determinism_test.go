package machine

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/money"
)

// scenario runs a small mixed workload and returns every output, in order, as JSON, plus
// the final digest.
func scenario(t *testing.T, withNoise bool) (string, [32]byte) {
	h := newHarness(t)
	m1, k1 := h.register("Alpha")
	if withNoise {
		// An unrelated party registers and streams in between; ids differ from then on,
		// so only the digest of the unrelated run is compared with itself.
		h.register("Noise")
	}
	h.connect(k1)
	rfq := h.ok(h.apply(CreateRFQ{Req: Req{KeyHash: keyHash("house-key")}, Direction: Buy, Qty: money.MustParse("2"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{h.d.Parties[m1].Hint}, TTLSeconds: 30}), 200).(RfqDTO)
	q := h.ok(h.apply(SubmitQuote{Req: Req{KeyHash: keyHash(k1)}, RFQID: rfq.RfqID, Price: money.MustParse("100001.5")}), 200).(QuoteWithActionsDTO)
	h.sign(m1, k1, q.Actions)
	h.apply(AcceptQuote{Req: Req{KeyHash: keyHash("house-key")}, QuoteID: q.QuoteID})
	h.advance(40 * 1e9)
	digest, err := h.d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, struct {
		E []Event
		R map[uint64]Reply
	}{h.events, h.replies}), digest
}

// TestDeterminism: the same inputs give the same outputs and digest, run after run.
func TestDeterminism(t *testing.T) {
	out1, d1 := scenario(t, false)
	out2, d2 := scenario(t, false)
	if out1 != out2 || d1 != d2 {
		t.Fatal("two runs of the same inputs diverged")
	}
	_, n1 := scenario(t, true)
	_, n2 := scenario(t, true)
	if n1 != n2 {
		t.Fatal("two runs with an unrelated party diverged")
	}
}

// TestSnapshotRoundTrip: a desk restored from its snapshot has the same digest, and a JSON
// snapshot (as earlier desks wrote) is refused.
func TestSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t)
	_, k1 := h.register("Alpha")
	h.connect(k1)
	if _, err := Restore([]byte(mustJSON(t, h.d))); err == nil || !strings.Contains(err.Error(), "a JSON desk snapshot") {
		t.Fatalf("Restore(JSON) = %v, want a refusal naming a JSON desk snapshot", err)
	}
	roundTrip(t, h.d)
}

// TestEnvelopeCodec: every input kind round-trips through the journal record encoding.
func TestEnvelopeCodec(t *testing.T) {
	inputs := []Input{
		Tick{}, Boot{}, SocketOpened{Socket: 3, KeyHash: keyHash("k")}, SocketClosed{Socket: 3},
		LedgerResult{CommandID: "c", Failure: &LedgerFailure{Category: LedgerContention, Message: "m"}},
		RegisterStart{DisplayName: "A", PublicKey: []byte{1, 2}},
		CreateRFQ{Req: Req{KeyHash: "h"}, Direction: Sell, Qty: money.MustParse("1.5"), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"x"}, TTLSeconds: 9},
		ExecuteActions{Entries: []SignedAction{{ActionID: "act_1", Signature: []byte{9}}}, Batch: true},
		Withdraw{Symbol: "cc", Amount: money.MustParse("3"), Receiver: "a::b"},
	}
	for _, in := range inputs {
		b, err := EncodeEnvelope(Envelope{Seq: 7, At: t0, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		env, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("%s: %v", in.Kind(), err)
		}
		if env.Seq != 7 || !env.At.Equal(t0) || mustJSON(t, env.Input) != mustJSON(t, in) || env.Input.Kind() != in.Kind() {
			t.Fatalf("%s round trip: %+v", in.Kind(), env)
		}
	}
	if _, err := DecodeEnvelope([]byte{recordVersion + 1}); err == nil {
		t.Fatal("a newer record version must be refused")
	}
}
