package machine

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// fill sets every exported field reachable from v (a pointer) to a drawn value: strings,
// numbers, decimals, times, nil or empty or filled slices, maps and pointers. A field the
// binary codecs forget then shows as a difference in the JSON after a round trip.
func fill(t *rapid.T, v reflect.Value, path string) {
	switch v.Type() {
	case reflect.TypeOf(money.Decimal{}):
		s := rapid.StringMatching(`[0-9]{1,20}(\.[0-9]{1,10})?`).Draw(t, path)
		v.Set(reflect.ValueOf(money.MustParse(s)))
		return
	case reflect.TypeOf(time.Time{}):
		if rapid.IntRange(0, 4).Draw(t, path+"-zero") == 0 {
			return
		}
		sec := rapid.Int64Range(0, 4e9).Draw(t, path+"-sec")
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, path+"-nsec")
		v.Set(reflect.ValueOf(time.Unix(sec, nsec).UTC()))
		return
	case reflect.TypeOf(Config{}):
		return // embedded as JSON; validated configurations are covered by the other tests
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(rapid.StringN(0, 12, -1).Draw(t, path))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, path))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(rapid.Int64Range(-1e12, 1e12).Draw(t, path))
	case reflect.Uint8:
		v.SetUint(uint64(rapid.Byte().Draw(t, path)))
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(rapid.Uint64().Draw(t, path))
	case reflect.Pointer:
		if rapid.IntRange(0, 3).Draw(t, path+"-nil") == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		n := rapid.IntRange(-1, 3).Draw(t, path+"-len")
		if n < 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range rapid.IntRange(0, 3).Draw(t, path+"-len") {
			k := reflect.New(v.Type().Key()).Elem()
			fill(t, k, fmt.Sprintf("%s-key%d", path, i))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(t, e, fmt.Sprintf("%s[%d]", path, i))
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Interface:
		// none in the state or the inputs
	default:
		t.Fatalf("fill: unhandled kind %s at %s", v.Kind(), path)
	}
}

func toJSON(t *rapid.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSnapshotCodecCoversEveryField: a desk with every field drawn survives the binary
// snapshot unchanged (as JSON shows it), re-encodes to the same bytes, and keeps its digest.
func TestSnapshotCodecCoversEveryField(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, err := NewDesk(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		fill(t, reflect.ValueOf(d).Elem(), "desk")
		b, err := d.EncodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := toJSON(t, back), toJSON(t, d); got != want {
			t.Fatalf("round trip changed the state:\n got %s\nwant %s", got, want)
		}
		again, err := back.EncodeSnapshot()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs (%v)", err)
		}
		if !reflect.DeepEqual(nilness(reflect.ValueOf(d)), nilness(reflect.ValueOf(back))) {
			t.Fatal("nil and empty slices or pointers were not kept apart")
		}
	})
}

// nilness lists, in order, whether every slice and pointer reachable from v is nil.
func nilness(v reflect.Value) []bool {
	var out []bool
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			out = append(out, v.IsNil())
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			out = append(out, v.IsNil())
			if v.Type().Elem().Kind() != reflect.Uint8 {
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i))
				}
			}
		case reflect.Map:
			for _, k := range v.MapKeys() { // map order: only counts matter here
				_ = k
			}
			out = append(out, v.Len() == 0)
		case reflect.Struct:
			if v.Type() == reflect.TypeOf(money.Decimal{}) || v.Type() == reflect.TypeOf(time.Time{}) {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(v)
	return out
}

// allInputs is a zero value of every journaled input kind.
func allInputs() []Input {
	var out []Input
	for _, mk := range inputKinds {
		out = append(out, deref(mk()))
	}
	return out
}

// TestRecordCodecEveryKind: every input kind, with every field drawn, survives a version-2
// record unchanged, through the fast path and through the generic JSON path alike.
func TestRecordCodecEveryKind(t *testing.T) {
	kinds := allInputs()
	rapid.Check(t, func(t *rapid.T) {
		proto := kinds[rapid.IntRange(0, len(kinds)-1).Draw(t, "kind")]
		p := reflect.New(reflect.TypeOf(proto))
		fill(t, p.Elem(), proto.Kind())
		in := p.Elem().Interface().(Input)
		at := time.Unix(rapid.Int64Range(0, 4e9).Draw(t, "at"), rapid.Int64Range(0, 1e9-1).Draw(t, "ns")).UTC()
		seq := rapid.Uint64().Draw(t, "seq")
		b, err := EncodeEnvelope(Envelope{Seq: seq, At: at, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("record is not JSON: %s", b)
		}
		check := func(how string, env Envelope, err error) {
			if err != nil {
				t.Fatalf("%s: %v\n%s", how, err, b)
			}
			if env.Seq != seq || !env.At.Equal(at) || env.Input.Kind() != in.Kind() ||
				reflect.TypeOf(env.Input) != reflect.TypeOf(in) || toJSON(t, env.Input) != toJSON(t, in) {
				t.Fatalf("%s: %+v, want %+v", how, env, in)
			}
			if !reflect.DeepEqual(nilness(reflect.ValueOf(env.Input)), nilness(reflect.ValueOf(in))) {
				t.Fatalf("%s: nil and empty were not kept apart", how)
			}
		}
		env, err := DecodeEnvelope(b)
		check("fast path", env, err)
		// The same record spelled differently (indented) takes the generic path.
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", " "); err != nil {
			t.Fatal(err)
		}
		env, err = DecodeEnvelope(ind.Bytes())
		check("generic path", env, err)
	})
}

// TestRecordVersion1: records of version 1 (the input's JSON) still decode, and their
// checkpoints are marked as digests of the state's JSON.
func TestRecordVersion1(t *testing.T) {
	for _, tc := range []struct {
		rec  string
		want Input
	}{
		{`{"v":1,"seq":9,"at":"2026-11-21T12:00:00.5Z","kind":"tick","input":{}}`, Tick{}},
		{`{"v":1,"seq":9,"at":"2026-11-21T12:00:00.5Z","kind":"rfq.create","input":{"keyHash":"h","direction":"SELL","qty":"1.5","base":"cbtc","quote":"usdcx","invitedMakers":["x"],"ttlSeconds":9}}`,
			CreateRFQ{Req: Req{KeyHash: "h"}, Direction: Sell, Qty: money.MustParse("1.5"), Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{"x"}, TTLSeconds: 9}},
		{`{"v":1,"seq":9,"at":"2026-11-21T12:00:00.5Z","kind":"checkpoint","input":{"digest":"ab"}}`,
			Checkpoint{Digest: "ab", Scheme: DigestJSON}},
	} {
		env, err := DecodeEnvelope([]byte(tc.rec))
		if err != nil {
			t.Fatalf("%s: %v", tc.rec, err)
		}
		if env.Seq != 9 || !env.At.Equal(t0.Add(500*time.Millisecond)) || mustJSON(t, env.Input) != mustJSON(t, tc.want) {
			t.Errorf("%s: %+v", tc.rec, env)
		}
	}
}

// TestLegacyCheckpointVerifies: a version-1 checkpoint (JSON digest) verifies against the
// state it was taken of, and a version-2 one against the binary digest.
func TestLegacyCheckpointVerifies(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	h.newRFQ(houseTaker, Buy, "1", 30, m)
	legacy, _ := h.d.LegacyDigest()
	current, _ := h.d.Digest()
	rec := fmt.Sprintf(`{"v":1,"seq":9,"at":"2026-11-21T12:00:00Z","kind":"checkpoint","input":{"digest":"%x"}}`, legacy)
	env, err := DecodeEnvelope([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.d.VerifyCheckpoint(env.Input.(Checkpoint)); !ok || err != nil {
		t.Fatalf("version-1 checkpoint: %v %v", ok, err)
	}
	b, _ := EncodeEnvelope(Envelope{Seq: 10, At: t0, Input: Checkpoint{Digest: fmt.Sprintf("%x", current)}})
	env, _ = DecodeEnvelope(b)
	if ok, err := h.d.VerifyCheckpoint(env.Input.(Checkpoint)); !ok || err != nil {
		t.Fatalf("version-2 checkpoint: %v %v", ok, err)
	}
	if ok, _ := h.d.VerifyCheckpoint(Checkpoint{Digest: fmt.Sprintf("%x", legacy)}); ok {
		t.Fatal("a JSON digest passed as a binary one")
	}
}

// TestRestoreCarriesOn: a desk restored from its binary snapshot in the middle of a run
// answers the rest of the run exactly like the original: same replies, events, ledger
// calls and digest.
func TestRestoreCarriesOn(t *testing.T) {
	h := newHarness(t)
	a, b := h.maker("Alpha"), h.maker("Beta")
	h.connect(a.key)
	rfq := h.newRFQ(houseTaker, Buy, "0.5", 60, a, b)
	qa := h.submit(a, rfq.RfqID, "100000")
	h.auto = false
	// Beta's quote has its prepares in flight at the snapshot.
	h.apply(SubmitQuote{Req: b.req(), RFQID: rfq.RfqID, Price: money.MustParse("99999.5")})
	snap, err := h.d.EncodeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	twin := h.clone(restored)

	rest := func(h *harness) string {
		h.flush()
		h.auto = true
		for _, x := range qa.Actions {
			h.signOne(a, x)
		}
		h.advance(time.Second)
		tr := h.accept(houseTaker, qa.QuoteID)
		for _, x := range tr.Actions {
			h.signOne(houseTaker, x)
		}
		h.advance(2 * time.Minute)
		h.advance(20 * time.Minute)
		d, err := h.d.Digest()
		if err != nil {
			h.t.Fatal(err)
		}
		return fmt.Sprintf("%x %s", d, mustJSON(t, struct {
			E []Event
			R map[uint64]Reply
			C []SocketClose
		}{h.events, h.replies, h.closes}))
	}
	if x, y := rest(h), rest(twin); x != y {
		t.Fatalf("the restored desk diverged:\noriginal %s\nrestored %s", x, y)
	}
}

// clone returns a harness in the same position as h, over desk d.
func (h *harness) clone(d *Desk) *harness {
	c := *h
	c.d = d
	c.queued = append([]LedgerCall(nil), h.queued...)
	c.events = append([]Event(nil), h.events...)
	c.closes = append([]SocketClose(nil), h.closes...)
	c.replies = map[uint64]Reply{}
	for k, v := range h.replies {
		c.replies[k] = v
	}
	l := *h.ledger
	l.keys, l.topo, l.prepared = map[string]ed25519.PublicKey{}, map[string][]byte{}, map[string]preparedTx{}
	for k, v := range h.ledger.keys {
		l.keys[k] = v
	}
	for k, v := range h.ledger.topo {
		l.topo[k] = v
	}
	for k, v := range h.ledger.prepared {
		l.prepared[k] = v
	}
	l.failures = append([]scriptedFailure(nil), h.ledger.failures...)
	c.ledger = &l
	return &c
}

// TestProperty_SnapshotEveryStep runs the random API model with the desk swapped for its
// binary snapshot's restoration after every step: invariants and liveness must still hold,
// and each snapshot must restore to the same JSON and the same bytes.
func TestProperty_SnapshotEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPropModel(t)
		acts := m.actions()
		check := acts[""]
		acts[""] = func(t *rapid.T) {
			if check != nil {
				check(t)
			}
			b, err := m.h.d.EncodeSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Restore(b)
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, back) != toJSON(t, m.h.d) {
				t.Fatal("the binary snapshot changed the state")
			}
			if again, _ := back.EncodeSnapshot(); !bytes.Equal(again, b) {
				t.Fatal("the restored desk encodes differently")
			}
			m.h.d = back
		}
		t.Repeat(acts)
		m.settle(t)
	})
}
