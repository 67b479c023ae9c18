package ledgersim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/deskco/rfqdesk/money"
)

// inputRecordsFile holds ledger journal records in their JSON form (as builds before the
// binary form journaled them) with their binary form: recorded ones, cut from a simulator
// run (testdata/traces/seed1-mild-standard-trimmed.jsonl at the repository's top), and
// crafted ones (craftedInputs). -update rewrites the binary forms and the crafted records.
const inputRecordsFile = "testdata/input-records.jsonl"

// inputRecord is one line of inputRecordsFile.
type inputRecord struct {
	Name   string          `json:"name"` // "steady-N": the benchmark's set; crafted names
	JSON   json.RawMessage `json:"json"`
	Binary string          `json:"binary"` // hex
}

// eqInput compares inputs field by field: amounts by value (the binary form keeps them
// reduced), nil and empty slices apart, times by instant and location.
var eqInput = cmp.Options{
	cmp.Comparer(func(a, b money.Decimal) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) && a.Location() == b.Location() }),
}

func hexN(n int, seed byte) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return hex.EncodeToString(b)
}

// craftedInputs cover what the recorded ones do not: every input kind, every command,
// nil and empty slices, empty envelopes, unknown kinds and ids that only look like ids.
func craftedInputs() map[string]Input {
	at := time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.UTC)
	party := "sim-maker-1::1220" + hexN(32, 1)
	other := "desk-operator::1220" + hexN(32, 2)
	cid := "00" + hexN(32, 3)
	upd := "1220" + hexN(32, 4)
	prep := "prep-" + hexN(16, 5)
	sig := bytes.Repeat([]byte{9}, 64)
	ref := SettlementRef{Executor: other, ID: "trade-7"}
	return map[string]Input{
		"tick":                {Kind: InputTick, At: at},
		"allocate-internal":   {Kind: InputAllocateInternal, At: at, Hint: "desk-fees", PartyID: other},
		"delist":              {Kind: InputDelist, At: at, Instrument: "cbtc"},
		"onboard-empty-key":   {Kind: InputOnboard, At: at, Hint: "h", PublicKey: []byte{}, PartyID: "h::1220" + strings.ToUpper(hexN(32, 6))},
		"complete-null-sigs":  {Kind: InputCompleteOnboarding, At: at, PartyID: party, Signatures: [][]byte{sig, nil, {}}},
		"complete-empty-sigs": {Kind: InputCompleteOnboarding, At: at, PartyID: party, Signatures: [][]byte{}},
		"prepare-allocate-send": {Kind: InputPrepare, At: at, ActAs: party, CommandID: "alloc:" + cid + ":3", PreparedID: prep, Hash: sig[:32],
			Command: Envelope(Allocate{Settlement: ref, LegID: "leg-1", Side: SideSend, Instrument: "cbtc", Amount: money.MustParse("0.00012345"),
				AllocateBefore: at.Add(time.Minute), SettleBefore: at.Add(time.Hour)})},
		"submit-allocate-receive": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "c1", UpdateID: upd,
			Command: Envelope(Allocate{Settlement: ref, LegID: "leg-2", Side: SideReceive, Instrument: "usdcx", Amount: money.MustParse("123456789012345678901234567890.5"),
				SettleBefore: at.Add(time.Hour)})},
		"submit-cancel-allocation":   {Kind: InputSubmit, At: at, ActAs: other, CommandID: "c2", UpdateID: upd, Command: Envelope(CancelAllocation{Allocation: cid})},
		"submit-withdraw-allocation": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "c3", UpdateID: upd, Command: Envelope(WithdrawAllocation{Allocation: "not-an-id"})},
		"submit-settle": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "settle:trade-7", UpdateID: upd,
			Command: Envelope(Settle{Settlement: ref, Legs: []Leg{{Sender: party, Receiver: other, Instrument: "cbtc", Amount: money.MustParse("1.5")},
				{Sender: other, Receiver: party, Instrument: "usdcx", Amount: money.MustParse("150000")}}, Allocations: []string{cid, "00" + hexN(32, 8)}})},
		"submit-settle-nil-legs":   {Kind: InputSubmit, At: at, ActAs: other, CommandID: "c4", Command: Envelope(Settle{Settlement: ref, Allocations: []string{}})},
		"submit-settle-empty-legs": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "c5", Command: Envelope(Settle{Settlement: ref, Legs: []Leg{}})},
		"submit-transfer": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "faucet:1", UpdateID: upd,
			Command: Envelope(Transfer{Receiver: party, Instrument: "cc", Amount: money.MustParse("25000"), ExecuteBefore: at.Add(24 * time.Hour), Reason: "faucet"})},
		"prepare-allocate-named-inputs": {Kind: InputPrepare, At: at, ActAs: party, CommandID: "alloc:named", PreparedID: prep, Hash: sig[:32],
			Command: Envelope(Allocate{Settlement: ref, LegID: "leg-3", Side: SideSend, Instrument: "cbtc", Amount: money.MustParse("2"),
				SettleBefore: at.Add(time.Hour), Inputs: []string{cid, "00" + hexN(32, 9)}})},
		"submit-transfer-named-inputs": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "faucet:2", UpdateID: upd,
			Command: Envelope(Transfer{Receiver: party, Instrument: "cc", Amount: money.MustParse("1"), Inputs: []string{cid}})},
		"submit-transfer-empty-inputs": {Kind: InputSubmit, At: at, ActAs: other, CommandID: "faucet:3",
			Command: Envelope(Transfer{Receiver: party, Instrument: "cc", Amount: money.MustParse("1"), Inputs: []string{}})},
		"prepare-transfer-no-expiry": {Kind: InputPrepare, At: at, ActAs: party, CommandID: "t", PreparedID: prep, Hash: sig[:32],
			Command: Envelope(Transfer{Receiver: other, Instrument: "cc", Amount: money.MustParse("0.1")})},
		"prepare-accept-transfer":   {Kind: InputPrepare, At: at, ActAs: party, CommandID: "a", PreparedID: prep, Hash: sig[:32], Command: Envelope(AcceptTransfer{Instruction: cid})},
		"prepare-reject-transfer":   {Kind: InputPrepare, At: at, ActAs: party, CommandID: "r", PreparedID: prep, Hash: sig[:32], Command: Envelope(RejectTransfer{Instruction: cid})},
		"prepare-withdraw-transfer": {Kind: InputPrepare, At: at, ActAs: party, CommandID: "w", PreparedID: prep, Hash: sig[:32], Command: Envelope(WithdrawTransfer{Instruction: cid})},
		"submit-preapproval-self":   {Kind: InputSubmit, At: at, ActAs: party, CommandID: "p", UpdateID: upd, Command: Envelope(CreatePreapproval{})},
		"submit-preapproval-other":  {Kind: InputSubmit, At: at, ActAs: other, CommandID: "p2", UpdateID: upd, Command: Envelope(CreatePreapproval{Receiver: party})},
		"execute":                   {Kind: InputExecute, At: at, PreparedID: prep, Signature: sig, UpdateID: upd},
		"empty-envelope":            {Kind: InputSubmit, At: at, Command: &CommandEnvelope{}},
		"two-commands":              {Kind: InputSubmit, At: at, Command: &CommandEnvelope{AcceptTransfer: &AcceptTransfer{}, CreatePreapproval: &CreatePreapproval{}}},
		"zero-time":                 {Kind: InputTick},
		"unknown-kind-every-field": {Kind: "future-kind", At: at, Hint: "h", PublicKey: sig[:32], PartyID: party, Signatures: [][]byte{sig}, ActAs: party,
			CommandID: "c", Command: Envelope(CreatePreapproval{Receiver: "r"}), PreparedID: "prep-other", Hash: sig[:32], Signature: sig,
			Instrument: "cbtc", UpdateID: "1220" + strings.Repeat("0", 63)},
		"empty-kind": {At: at},
		"list-instrument": {Kind: InputListInstrument, At: at, CommandID: "list-instrument:XAU", UpdateID: upd,
			Listing: &Listing{Spec: InstrumentSpec{ID: "XAU", Admin: "token-registry", Symbol: "xau", DisplaySymbol: "XAU", Decimals: 4}, Reservoir: money.MustParse("1000000")}},
		"list-instrument-no-reservoir": {Kind: InputListInstrument, At: at, CommandID: "list-instrument:wETH", UpdateID: upd,
			Listing: &Listing{Spec: InstrumentSpec{ID: "wETH", Admin: "token-registry", Symbol: "weth", DisplaySymbol: "wETH", Decimals: 10, Native: true}}},
	}
}

// readInputRecords reads inputRecordsFile.
func readInputRecords(t testing.TB) []inputRecord {
	t.Helper()
	f, err := os.Open(inputRecordsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []inputRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r inputRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", inputRecordsFile, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInputRecordsGolden: every JSON record an older build journaled decodes, encodes to
// the pinned binary bytes, and decodes back to the same input, whose JSON is the record.
func TestInputRecordsGolden(t *testing.T) {
	recs := readInputRecords(t)
	crafted := craftedInputs()
	if *update {
		seen := map[string]bool{}
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		write := func(name string, in Input, js []byte) {
			seen[name] = true
			if js == nil {
				var err error
				if js, err = json.Marshal(in); err != nil {
					t.Fatal(err)
				}
			}
			bin, err := in.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := enc.Encode(inputRecord{Name: name, JSON: js, Binary: hex.EncodeToString(bin)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range recs {
			if c, ok := crafted[r.Name]; ok {
				write(r.Name, c, nil)
				continue
			}
			in, err := DecodeInput(r.JSON)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			write(r.Name, in, r.JSON)
		}
		for _, name := range slices.Sorted(maps.Keys(crafted)) {
			if !seen[name] {
				write(name, crafted[name], nil)
			}
		}
		if err := os.WriteFile(filepath.FromSlash(inputRecordsFile), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		recs = readInputRecords(t)
	}
	kinds := map[InputKind]bool{}
	for _, r := range recs {
		t.Run(r.Name, func(t *testing.T) {
			in, err := DecodeInput(r.JSON)
			if err != nil {
				t.Fatal(err)
			}
			kinds[in.Kind] = true
			if js, err := json.Marshal(in); err != nil || !bytes.Equal(js, r.JSON) {
				t.Fatalf("the record does not re-encode as JSON (%v):\n got %s\nwant %s", err, js, r.JSON)
			}
			// A crafted input's binary form is pinned, not that of its JSON, which loses
			// what JSON cannot tell apart (empty slices it omits).
			src := in
			if c, ok := crafted[r.Name]; ok {
				src = c
				if diff := cmp.Diff(in, decodeBinaryOK(t, in), eqInput); diff != "" {
					t.Errorf("binary round trip of the JSON record (-want +got):\n%s", diff)
				}
			}
			bin, err := src.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(bin); got != r.Binary {
				t.Errorf("binary form changed (a layout change needs a new InputBinaryVersion; rerun with -update and review):\n got %s\nwant %s", got, r.Binary)
			}
			back, err := DecodeInput(bin)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(src, back, eqInput); diff != "" {
				t.Errorf("binary round trip (-want +got):\n%s", diff)
			}
			if js, err := json.Marshal(back); err != nil || !bytes.Equal(js, r.JSON) {
				t.Errorf("the binary round trip shows as different JSON (%v):\n got %s\nwant %s", err, js, r.JSON)
			}
			if len(bin) >= len(r.JSON) {
				t.Errorf("binary %d bytes, JSON %d", len(bin), len(r.JSON))
			}
		})
	}
	for _, k := range inputKinds {
		if !kinds[k] {
			t.Errorf("no record of kind %s in %s", k, inputRecordsFile)
		}
	}
}

func decodeBinaryOK(t interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}, in Input) Input {
	t.Helper()
	bin, err := in.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeInput(bin)
	if err != nil {
		t.Fatalf("decode % x: %v", bin, err)
	}
	return back
}

// drawID draws a string that is often one of the ledger's id forms, or nearly one.
func drawID(t *rapid.T, label string) string {
	hexOf := func(n int) string {
		return hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, label+"-raw"))
	}
	switch rapid.IntRange(0, 9).Draw(t, label+"-form") {
	case 0:
		return "00" + hexOf(32)
	case 1:
		return "1220" + hexOf(32)
	case 2:
		return "prep-" + hexOf(16)
	case 3:
		return rapid.StringN(0, 12, -1).Draw(t, label+"-hint") + "::1220" + hexOf(32)
	case 4: // upper-case hex, or one digit short: text
		return rapid.SampledFrom([]string{"00", "1220", "prep-", "p::1220"}).Draw(t, label+"-prefix") +
			rapid.SampledFrom([]func(string) string{strings.ToUpper, func(s string) string { return s[1:] }}).Draw(t, label+"-spoil")(hexOf(32))
	}
	return rapid.StringN(0, 12, -1).Draw(t, label)
}

// fillInput sets every exported field reachable from v to a drawn value (nil, empty and
// zero values included), as machine's snapshot test does for the desk.
func fillInput(t *rapid.T, v reflect.Value, path string) {
	switch v.Type() {
	case reflect.TypeOf(money.Decimal{}):
		d := money.MustParse(rapid.StringMatching(`[0-9]{1,30}(\.[0-9]{1,10})?`).Draw(t, path))
		if rapid.IntRange(0, 5).Draw(t, path+"-neg") == 0 {
			d = money.Zero.Sub(d)
		}
		v.Set(reflect.ValueOf(d))
		return
	case reflect.TypeOf(time.Time{}):
		if rapid.IntRange(0, 4).Draw(t, path+"-zero") == 0 {
			return
		}
		sec := rapid.Int64Range(-62135596800, 253402300799).Draw(t, path+"-sec") // years 1 to 9999
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, path+"-nsec")
		v.Set(reflect.ValueOf(time.Unix(sec, nsec).UTC()))
		return
	case reflect.TypeOf(InputKind("")):
		if rapid.Bool().Draw(t, path+"-known") {
			v.SetString(string(rapid.SampledFrom(inputKinds[:]).Draw(t, path)))
		} else {
			v.SetString(rapid.StringN(0, 12, -1).Draw(t, path))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(drawID(t, path))
	case reflect.Uint8:
		v.SetUint(uint64(rapid.Byte().Draw(t, path)))
	case reflect.Int:
		v.SetInt(int64(rapid.IntRange(0, money.MaxFractionDigits).Draw(t, path)))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, path))
	case reflect.Pointer:
		if rapid.IntRange(0, 2).Draw(t, path+"-nil") == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillInput(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		n := rapid.IntRange(-1, 3).Draw(t, path+"-len")
		if n < 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillInput(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillInput(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("fillInput: unhandled kind %s at %s", v.Kind(), path)
	}
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
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
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

// TestInputBinaryCoversEveryField: an input with every field drawn (every kind, every
// command, nil and empty slices, negative and huge amounts, ids and near-ids) survives
// the binary form unchanged, re-encodes to the same bytes, shows as the same JSON, and
// every shorter prefix of its encoding is refused.
func TestInputBinaryCoversEveryField(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in Input
		fillInput(t, reflect.ValueOf(&in).Elem(), "in")
		bin, err := in.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(bin) > in.sizeHint() {
			t.Fatalf("%d bytes, more than the size hint %d", len(bin), in.sizeHint())
		}
		back, err := DecodeInput(bin)
		if err != nil {
			t.Fatalf("decode % x: %v", bin, err)
		}
		if diff := cmp.Diff(in, back, eqInput); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
		if !reflect.DeepEqual(nilness(reflect.ValueOf(in)), nilness(reflect.ValueOf(back))) {
			t.Fatal("nil and empty slices or pointers were not kept apart")
		}
		again, err := back.AppendBinary([]byte("prefix"))
		if err != nil || string(again[:6]) != "prefix" || !bytes.Equal(again[6:], bin) {
			t.Fatalf("re-encoding differs (%v):\n got % x\nwant % x", err, again, bin)
		}
		// Whatever JSON can hold, it holds alike from the input and its round trip, and
		// the JSON record decodes to what the binary one does (JSON drops empty slices).
		if js, err := json.Marshal(in); err == nil {
			js2, err := json.Marshal(back)
			if err != nil || !bytes.Equal(js, js2) {
				t.Fatalf("JSON differs after the round trip (%v):\n%s\n%s", err, js, js2)
			}
			fromJSON, err := DecodeInput(js)
			if err != nil {
				t.Fatalf("decode %s: %v", js, err)
			}
			again := decodeBinaryOK(t, fromJSON)
			if diff := cmp.Diff(fromJSON, again, eqInput); diff != "" {
				t.Fatalf("binary round trip of the JSON record (-want +got):\n%s", diff)
			}
		}
		cut := rapid.IntRange(0, len(bin)-1).Draw(t, "cut")
		if _, err := DecodeInput(bin[:cut]); !errors.Is(err, ErrInputRecord) {
			t.Fatalf("a %d-byte prefix of % x: %v, want ErrInputRecord", cut, bin, err)
		}
	})
}

// TestDecodeInputRefuses: damaged or foreign records are errors that match ErrInputRecord.
func TestDecodeInputRefuses(t *testing.T) {
	settle := craftedInputs()["submit-settle"]
	good, err := settle.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	huge := []byte{InputBinaryVersion, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"version 2", append([]byte{2}, good[1:]...)},
		{"version 0", []byte{0}},
		{"trailing byte", append(append([]byte{}, good...), 0)},
		{"unknown kind", []byte{InputBinaryVersion, byte(len(inputKinds) + 1), 0, 0, 0}},
		{"known kind as text", append([]byte{InputBinaryVersion, 0, 4}, "tick\x00\x00\x00"...)},
		{"overlong varint", []byte{InputBinaryVersion, 0x88, 0x00, 0, 0, 0}},
		{"huge string length", huge},
		{"unknown field", []byte{InputBinaryVersion, 8, 0, 0, 0x80, 0x40}},
		{"empty hint marked present", []byte{InputBinaryVersion, 8, 0, 0, inHint, 0}},
		{"nanoseconds out of range", append(binary.AppendUvarint([]byte{InputBinaryVersion, 8, 2}, 1e9), 0)},
		{"contract id as text", append([]byte{InputBinaryVersion, 8, 0, 0, inPartyID, idFormText, 66}, "00"+hexN(32, 1)...)},
		{"unknown id form", []byte{InputBinaryVersion, 8, 0, 0, inPartyID, 9}},
		{"truncated id", []byte{InputBinaryVersion, 8, 0, 0, inPartyID, idFormUpdate, 1, 2}},
		{"unknown command", []byte{InputBinaryVersion, 8, 0, 0, inCommand, 0x80, 0x04}},
		{"not JSON", []byte("kind: tick")},
		{"JSON of another shape", []byte(`{"kind":["tick"]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := DecodeInput(tc.rec)
			if !errors.Is(err, ErrInputRecord) {
				t.Fatalf("decode % x: %+v, %v; want ErrInputRecord", tc.rec, in, err)
			}
		})
	}
	// A length far beyond the record is refused before anything is allocated for it: the
	// bytes allocated per decode stay small (counted in bytes, not allocations, which the
	// race detector's instrumentation changes).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = DecodeInput(huge)
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / 10; perRun > 16<<10 {
		t.Errorf("decoding a record announcing a huge string allocates %d bytes", perRun)
	}
	// JSON with leading whitespace is still JSON.
	if in, err := DecodeInput([]byte(" \n{\"kind\":\"tick\"}")); err != nil || in.Kind != InputTick {
		t.Errorf("JSON after whitespace: %+v, %v", in, err)
	}
}

// TestAppendBinaryRefuses: what the binary form cannot hold is an error, not a record.
func TestAppendBinaryRefuses(t *testing.T) {
	for name, in := range map[string]Input{
		"time before year 1": {Kind: InputTick, At: time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)},
		"expiry too late":    {Kind: InputSubmit, Command: Envelope(Transfer{ExecuteBefore: time.Date(40000, 1, 1, 0, 0, 0, 0, time.UTC)})},
	} {
		if b, err := in.AppendBinary([]byte{7}); err == nil || !bytes.Equal(b, []byte{7}) {
			t.Errorf("%s: % x, %v; want an error and the buffer unchanged", name, b, err)
		}
	}
}

// steadyInputs are the benchmark's inputs: a minute of a simulated desk's ledger journal
// in steady trading (records 301 to 360 of the trimmed seed-1 standard scenario).
func steadyInputs(b *testing.B) []Input {
	var out []Input
	for _, r := range readInputRecords(b) {
		if strings.HasPrefix(r.Name, "steady-") {
			in, err := DecodeInput(r.JSON)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, in)
		}
	}
	if len(out) == 0 {
		b.Fatal("no steady records")
	}
	return out
}

// roundTrip encodes every input with encode and decodes it with DecodeInput (which reads
// either form), returning the bytes written.
func roundTrip(b *testing.B, ins []Input, encode func(*Input) ([]byte, error)) (size int) {
	for i := range ins {
		rec, err := encode(&ins[i])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeInput(rec); err != nil {
			b.Fatal(err)
		}
		size += len(rec)
	}
	return size
}

func jsonRoundTrip(b *testing.B, ins []Input) int {
	return roundTrip(b, ins, func(in *Input) ([]byte, error) { return json.Marshal(in) })
}

func binaryRoundTrip(b *testing.B, ins []Input) int {
	return roundTrip(b, ins, func(in *Input) ([]byte, error) { return in.AppendBinary(nil) })
}

// BenchmarkInputCodec encodes and decodes the steady set of ledger inputs (one op: every
// input once) as JSON and in the binary form; run with -benchmem.
func BenchmarkInputCodec(b *testing.B) {
	ins := steadyInputs(b)
	for _, bc := range []struct {
		name string
		fn   func(*testing.B, []Input) int
	}{{"json", jsonRoundTrip}, {"binary", binaryRoundTrip}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for b.Loop() {
				size = bc.fn(b, ins)
			}
			b.ReportMetric(float64(size)/float64(len(ins)), "B/record")
		})
	}
}

// BenchmarkInputCodecRatio runs the JSON and the binary round trip of the steady set
// alternately in the same run and reports how many times faster, and smaller, the binary
// form is (x-faster, x-smaller).
func BenchmarkInputCodecRatio(b *testing.B) {
	ins := steadyInputs(b)
	var tj, tb time.Duration
	var sj, sb int
	for b.Loop() {
		start := time.Now()
		sj = jsonRoundTrip(b, ins)
		mid := time.Now()
		sb = binaryRoundTrip(b, ins)
		tb += time.Since(mid)
		tj += mid.Sub(start)
	}
	b.ReportMetric(float64(tj)/float64(tb), "x-faster")
	b.ReportMetric(float64(sj)/float64(sb), "x-smaller")
	aj := testing.AllocsPerRun(20, func() { jsonRoundTrip(b, ins) })
	ab := testing.AllocsPerRun(20, func() { binaryRoundTrip(b, ins) })
	b.ReportMetric(aj/ab, "x-fewer-allocs")
}
