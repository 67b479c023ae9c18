package ledgersim

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskco/rfqdesk/money"
)

var goldSpec = InstrumentSpec{ID: "GOLD", Admin: "bitsafe", Symbol: "xau", DisplaySymbol: "XAU", Decimals: 4}

// TestListInstrument: an instrument listed after genesis is in the catalog with its
// reservoir funding minted in the same update, can be transferred, and a re-issue under
// the same command id does nothing more; a second listing of the id, an unknown admin
// and a negative reservoir are refused and change nothing.
func TestListInstrument(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	u, err := e.l.ListInstrument(goldSpec, d("500"), "list-gold")
	if err != nil {
		t.Fatal(err)
	}
	if u.Kind != KindListInstrument || len(u.Created) != 1 {
		t.Fatalf("update %+v: want one created holding of kind %s", u, KindListInstrument)
	}
	in, err := e.l.Instrument("GOLD")
	if err != nil || !in.Listed || in.Symbol != "xau" || in.Decimals != 4 {
		t.Fatalf("instrument %+v, %v", in, err)
	}
	e.wantFree(e.res, "GOLD", "500")
	if s, err := e.l.Supply("GOLD"); err != nil || !s.Equal(d("500")) {
		t.Fatalf("supply %s, %v", s, err)
	}
	again, err := e.l.ListInstrument(goldSpec, d("500"), "list-gold")
	if err != nil || again.UpdateID != u.UpdateID {
		t.Fatalf("re-issue: %v, update %s want %s", err, again.UpdateID, u.UpdateID)
	}
	e.wantFree(e.res, "GOLD", "500")
	digest := e.l.Digest()
	_, err = e.l.ListInstrument(goldSpec, d("1"), "list-gold-2")
	wantCat(t, err, CategoryInvalid)
	_, err = e.l.ListInstrument(InstrumentSpec{ID: "SILVER", Admin: "nobody"}, d("1"), "list-silver")
	wantCat(t, err, CategoryNotFound)
	_, err = e.l.ListInstrument(InstrumentSpec{ID: "SILVER", Admin: "bitsafe"}, money.FromInt(-1), "list-silver")
	wantCat(t, err, CategoryInvalid)
	_, err = e.l.ListInstrument(InstrumentSpec{ID: "SILVER", Admin: "bitsafe", Decimals: 11}, d("1"), "list-silver")
	wantCat(t, err, CategoryInvalid)
	if e.l.Digest() != digest {
		t.Fatal("a refused listing changed the state")
	}
	alice := e.external("alice")
	e.fund(alice, "GOLD", "2.5")
	e.wantFree(alice, "GOLD", "2.5")
	e.wantFree(e.res, "GOLD", "497.5")
	e.check()
}

// TestListInstrumentReplaysAndRestores: the recorded inputs (through their binary
// journal form) replay to the same state, and a snapshot taken after the listing
// restores to it and continues alike.
func TestListInstrumentReplaysAndRestores(t *testing.T) {
	e := newEnv(t, ProfileTestnet)
	alice := e.external("alice")
	e.clk.Advance(time.Minute)
	if _, err := e.l.ListInstrument(goldSpec, d("500"), "list-gold"); err != nil {
		t.Fatal(err)
	}
	e.fund(alice, "GOLD", "3")
	if err := e.l.Delist("GOLD"); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(ProfileTestnet, NewManualClock(t0))
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range e.inputs {
		b, err := in.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeInput(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in, back, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Fatalf("input %s round trip (-in +decoded):\n%s", in.Kind, diff)
		}
		if err := r.Replay(back); err != nil {
			t.Fatal(err)
		}
	}
	if r.Digest() != e.l.Digest() {
		t.Fatal("replay reached another digest")
	}
	if err := r.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	snap := snapshotOf(t, e.l)
	back, err := Restore(e.l.Config(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != e.l.Digest() {
		t.Fatal("restore reached another digest")
	}
	if err := back.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	in, err := back.Instrument("GOLD")
	if err != nil || in.Listed || in.Symbol != "xau" {
		t.Fatalf("restored instrument %+v, %v", in, err)
	}
	if s, _ := back.Supply("GOLD"); !s.Equal(d("500")) {
		t.Fatalf("restored supply %s", s)
	}
	again, _ := back.Snapshot()
	if !bytes.Equal(again, snap) {
		t.Fatal("the restored ledger's snapshot differs")
	}
	for _, l := range []*Ledger{e.l, back} {
		if _, err := l.ListInstrument(InstrumentSpec{ID: "SILVER", Admin: "bitsafe"}, d("7"), "list-silver"); err != nil {
			t.Fatal(err)
		}
	}
	if back.Digest() != e.l.Digest() {
		t.Fatal("a restored ledger continued to another digest")
	}
}

// TestRestoreRefusesOldFingerprintVersions: snapshots of versions 2 and 3 (the layouts
// before and after the section of instruments listed after genesis) hold party ids whose
// hex is the SHA-256 of the raw key alone; Restore refuses both, naming the versions and
// why, rather than restore a state today's ledger never reaches.
func TestRestoreRefusesOldFingerprintVersions(t *testing.T) {
	e := snapshotScenario(t)
	snap := snapshotOf(t, e.l)
	v3 := bytes.Clone(snap)
	v3[len(snapshotMagic)] = 3
	for v, old := range map[int][]byte{2: versionTwo(t, e.l, snap), 3: v3} {
		_, err := Restore(e.l.Config(), old)
		want := fmt.Sprintf("snapshot version %d, this build reads only version 5: its party ids carry the SHA-256 of the raw key, not Canton's fingerprint", v)
		if err == nil || !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), want) {
			t.Errorf("version %d: Restore = %v, want an ErrSnapshot naming %q", v, err, want)
		}
	}
	// Version 4: version 5's layout, of a ledger that chose input holdings itself.
	v4 := bytes.Clone(snap)
	v4[len(snapshotMagic)] = 4
	_, err := Restore(e.l.Config(), v4)
	want := "snapshot version 4, this build reads only version 5: its ledger chose the input holdings"
	if err == nil || !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), want) {
		t.Errorf("version 4: Restore = %v, want an ErrSnapshot naming %q", err, want)
	}
}

// versionTwo rewrites a snapshot of a ledger with no instrument listed after genesis in
// version 2's layout: the version byte, and the empty section (one zero byte) gone.
func versionTwo(t *testing.T, l *Ledger, snap []byte) []byte {
	t.Helper()
	// The section follows the genesis instruments; find it by re-encoding their prefix.
	st := l.st
	w := &snapWriter{}
	for _, id := range st.instrumentOrder {
		w.sym(id)
		w.Bool(st.instruments[id].Listed)
	}
	at := bytes.Index(snap, w.B)
	if at < 0 || len(st.added) != 0 || snap[at+len(w.B)] != 0 {
		t.Fatal("cannot locate the section of instruments listed after genesis")
	}
	at += len(w.B)
	out := append([]byte(nil), snap[:at]...)
	out = append(out, snap[at+1:]...)
	out[len(snapshotMagic)] = 2
	return out
}
