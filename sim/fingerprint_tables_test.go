package sim

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// changeEachField changes each field under v (settable) in turn so that it differs,
// recursing into pointers to structs and structs, and calls visit with its path and an undo.
func changeEachField(t *testing.T, v reflect.Value, path string, visit func(path string, undo func())) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			t.Fatalf("%s: nil pointer in the sample", path)
		}
		changeEachField(t, v.Elem(), path, visit)
		return
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			break
		}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			changeEachField(t, v.Field(i), path+"."+v.Type().Field(i).Name, visit)
		}
		return
	}
	old := reflect.New(v.Type()).Elem()
	old.Set(v)
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Nanosecond)))
	case v.Kind() == reflect.String:
		v.SetString(v.String() + "x")
	case v.Kind() == reflect.Bool:
		v.SetBool(!v.Bool())
	case v.CanInt():
		v.SetInt(v.Int() + 1)
	case v.CanUint():
		v.SetUint(v.Uint() + 1)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes(append(bytes.Clone(v.Bytes()), 'x'))
	case v.Kind() == reflect.Slice && v.Type() == reflect.TypeOf([]machine.ReasonCount(nil)):
		for i := range v.Len() {
			changeEachField(t, v.Index(i), path+"[i]", visit)
		}
		v.Set(reflect.Append(v, reflect.ValueOf(machine.ReasonCount{Reason: "more", N: 1})))
	default:
		t.Fatalf("%s: no change known for %s: teach the test and fpWriter the new field", path, v.Type())
	}
	visit(path, func() { v.Set(old) })
}

// TestFingerprintTablesSeeEveryField: changing any field of an idempotency record (its
// error's too) or of a scorecard fact (its reason counts' too) changes what the
// fingerprint writes. A field added to those structs fails here until fpWriter writes it.
func TestFingerprintTablesSeeEveryField(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	recs := []*machine.IdemRecord{
		{Key: "k1", Method: "POST", Path: "/rfq", BodyHash: "h", At: at, Seq: 7, Done: true, Status: 409,
			Body: []byte(`{}`), Err: &machine.APIError{Status: 409, Code: "CONFLICT", Message: "no"}},
	}
	facts := []machine.ScoreFact{
		{RFQ: "rfq_1", InvitedAt: at, Quoted: true, LatencyMs: 5, Declined: true, Won: 1, Settled: 1,
			Failed: []machine.ReasonCount{{Reason: "a", N: 1}}, Revoked: []machine.ReasonCount{{Reason: "b", N: 2}},
			Beaten: true, LostCentiBps: 3},
	}
	var fp fpScratch // as fingerprint writes them: through maphash, its sums to out
	write := func() []byte {
		var out bytes.Buffer
		f := fp.writer(&out)
		f.idemRecords(recs)
		f.flush()
		f.sum()
		f.scoreFacts(facts)
		f.flush()
		f.sum()
		fp.keep(f)
		return out.Bytes()
	}
	base := write()
	n := 0
	check := func(path string, undo func()) {
		n++
		if bytes.Equal(write(), base) {
			t.Errorf("changing %s leaves the fingerprint the same", path)
		}
		undo()
		if !bytes.Equal(write(), base) {
			t.Fatalf("undoing %s did not restore the sample", path)
		}
	}
	changeEachField(t, reflect.ValueOf(recs[0]), "IdemRecord", check)
	changeEachField(t, reflect.ValueOf(&facts[0]), "ScoreFact", check)
	if n < 20 {
		t.Fatalf("only %d fields changed", n)
	}
	// A record dropped, a nil one, an empty body against none: each a different fingerprint.
	recs = append(recs, nil)
	if bytes.Equal(write(), base) {
		t.Error("an added nil record leaves the fingerprint the same")
	}
	recs = recs[:1]
	recs[0].Body = nil
	none := write()
	recs[0].Body = []byte{}
	if bytes.Equal(write(), none) {
		t.Error("an empty body reads as no body")
	}
}

// BenchmarkFingerprintIdemRecords writes a full scope: 10,000 records with 400-byte
// answers, as a refusal's fingerprint does (what a refusal by a busy party pays).
//
//	go test ./sim -run '^$' -bench FingerprintIdemRecords -benchmem
func BenchmarkFingerprintIdemRecords(b *testing.B) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	recs := make([]*machine.IdemRecord, 10_000)
	for i := range recs {
		recs[i] = &machine.IdemRecord{Key: "key-" + strings.Repeat("k", 20), Method: "POST", Path: "/maker/quotes",
			BodyHash: strings.Repeat("h", 64), At: at, Seq: uint64(i), Done: true, Status: 201, Body: bytes.Repeat([]byte{'x'}, 400)}
	}
	var fp fpScratch
	b.ReportAllocs()
	for b.Loop() {
		f := fp.writer(sha256.New())
		f.idemRecords(recs)
		f.flush()
		f.sum()
		fp.keep(f)
	}
}
