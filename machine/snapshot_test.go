package machine

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
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
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("snapshot") != "-" {
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
		back := roundTrip(rapidTB{t}, d)
		if got, want := toJSON(t, back), toJSON(t, d); got != want {
			t.Fatalf("round trip changed the state:\n got %s\nwant %s", got, want)
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
	for _, f := range flows {
		out = append(out, f)
	}
	// In one order every run, so that a rapid failure's draw of a kind replays.
	slices.SortFunc(out, func(a, b Input) int { return strings.Compare(a.Kind(), b.Kind()) })
	return out
}

// mustRoundTrip checks that an input survives its journal record unchanged.
func mustRoundTrip(t *testing.T, in Input) {
	t.Helper()
	b, err := EncodeEnvelope(Envelope{Seq: 7, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	env, err := DecodeEnvelope(b)
	if err != nil || env.Input != in {
		t.Fatalf("decoded %+v, %v; want %+v", env.Input, err, in)
	}
}

// TestRecordCodecEveryKind: every input kind, with every field drawn, survives a journal
// record unchanged (nil and empty kept apart), and the record re-encodes to the same bytes.
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
		check("decode", env, err)
		again, err := EncodeEnvelope(env)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoded record differs (%v):\n%x\n%x", err, again, b)
		}
		if _, err := RecordJSON(b); err != nil {
			t.Fatalf("RecordJSON: %v", err)
		}
	})
}

// TestOlderRecordsRefused: the JSON records of earlier desks (versions 1 and 2) and any
// other version than 3 to 7 are refused with an error naming the version found and the ones read.
func TestOlderRecordsRefused(t *testing.T) {
	for _, tc := range []struct{ rec, want string }{
		{`{"v":1,"seq":9,"at":"2026-11-21T12:00:00.5Z","kind":"tick","input":{}}`, "journal record version 1 (JSON, written by an earlier desk); this desk reads only versions 3 to 7"},
		{`{"v":2,"seq":9,"at":"2026-11-21T12:00:00Z","kind":"socket.closed","bin":"Aw=="}`, "journal record version 2 (JSON, written by an earlier desk); this desk reads only versions 3 to 7"},
		{`{"kind":"tick"}`, "journal record version unknown (JSON); this desk reads only versions 3 to 7"},
		{"\x08\x01", "journal record version 8; this desk reads only versions 3 to 7"},
		{"", "empty"},
	} {
		if _, err := DecodeEnvelope([]byte(tc.rec)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.rec, err, tc.want)
		}
	}
}

// TestRecordJSON: a record renders for a person as its sequence number, time, kind and the
// input's JSON.
func TestRecordJSON(t *testing.T) {
	b, err := EncodeEnvelope(Envelope{Seq: 9, At: t0, Input: SocketClosed{Socket: 3}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := RecordJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"seq":9,"at":%q,"kind":"socket.closed","input":{"socket":3}}`, t0.Format(time.RFC3339Nano))
	if string(js) != want {
		t.Fatalf("RecordJSON = %s, want %s", js, want)
	}
}

// TestCheckpointVerifies: a checkpoint verifies against the state it was taken of, and
// not against another.
func TestCheckpointVerifies(t *testing.T) {
	h := newHarness(t)
	m := h.maker("Alpha")
	before, _ := h.d.Digest()
	h.newRFQ(houseTaker, Buy, "1", 30, m)
	current, _ := h.d.Digest()
	b, _ := EncodeEnvelope(Envelope{Seq: 10, At: t0, Input: Checkpoint{Digest: fmt.Sprintf("%x", current)}})
	env, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.d.VerifyCheckpoint(env.Input.(Checkpoint)); !ok || err != nil {
		t.Fatalf("checkpoint: %v %v", ok, err)
	}
	if ok, _ := h.d.VerifyCheckpoint(Checkpoint{Digest: fmt.Sprintf("%x", before)}); ok {
		t.Fatal("an earlier state's digest verified")
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
	restored := roundTrip(t, h.d)
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
			back := roundTrip(rapidTB{t}, m.h.d)
			if toJSON(t, back) != toJSON(t, m.h.d) {
				t.Fatal("the binary snapshot changed the state")
			}
			m.h.d = back
		}
		t.Repeat(acts)
		m.settle(t)
	})
}
