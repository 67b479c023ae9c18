package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestQueryKindsRoundTrip: every query a trace holds is written under a kind of its own and
// read back equal, fields and all; a line without fields reads as the kind's zero query,
// and an unknown kind is refused by name.
func TestQueryKindsRoundTrip(t *testing.T) {
	queries := []machine.Query{
		machine.QInstruments{}, machine.QMakerStatus{}, machine.QDesk{}, machine.QConfig{},
		machine.QRfqMine{}, machine.QRfqIncoming{}, machine.QRfqHistory{Limit: 7},
		machine.QTrades{Limit: 3}, machine.QMakerTrades{Limit: 9}, machine.QTxPending{},
		machine.QFaucetInfo{}, machine.QReferencePrice{Base: "cbtc", Quote: "usdcx"},
		machine.QBalances{Holdings: []machine.LedgerHolding{{Instrument: "reg:cbtc", Amount: money.MustParse("1.5"), Locked: true}}},
		machine.QIncoming{Transfers: []machine.LedgerTransfer{{CID: "c1", Sender: "s::1", Instrument: "reg:cc", Amount: money.MustParse("2")}}},
		machine.QScorecard{Window: "7d"},
	}
	if len(queries) != len(queryCodecs) {
		t.Fatalf("%d queries tested, %d kinds known", len(queries), len(queryCodecs))
	}
	kinds := map[string]bool{}
	for _, q := range queries {
		kind := queryKind(q)
		if kinds[kind] || strings.HasPrefix(kind, "machine.") {
			t.Fatalf("%T is written as kind %q, not a kind of its own", q, kind)
		}
		kinds[kind] = true
		b, err := encodeQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeQuery(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, q) {
			t.Fatalf("%s reads back as %#v, not %#v", b, back, q)
		}
		bare, err := decodeQuery(json.RawMessage(`{"kind":"` + kind + `"}`))
		if err != nil || !reflect.DeepEqual(bare, reflect.Zero(reflect.TypeOf(q)).Interface()) {
			t.Fatalf("%s without fields reads as %#v (%v), not its zero query", kind, bare, err)
		}
	}
	if _, err := decodeQuery(json.RawMessage(`{"kind":"nope"}`)); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("an unknown kind gives %v", err)
	}
	if _, err := decodeQuery(json.RawMessage(`{"kind":"trades","fields":{"Limit":"x"}}`)); err == nil || !strings.Contains(err.Error(), "trades") {
		t.Fatalf("spoiled fields give %v", err)
	}
}
