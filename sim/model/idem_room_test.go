package model

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// idemMakeRoomSorted is idemMakeRoom as it was: both passes over the keys in sorted order.
func (m *Model) idemMakeRoomSorted(scope string, recs map[string]*IdemRec, at time.Time) {
	for _, k := range sortedKeys(recs) {
		if r := recs[k]; at.Sub(r.At) >= m.idemRetention() {
			m.idemDelete(scope, k)
		}
	}
	if len(recs) >= idemMaxPerScope {
		oldest := ""
		for _, k := range sortedKeys(recs) {
			if r := recs[k]; oldest == "" || r.Seq < recs[oldest].Seq {
				oldest = k
			}
		}
		m.idemDelete(scope, oldest)
	}
}

// TestIdemMakeRoomProperty: dropping the expired records and the oldest at the bound
// without sorting keeps the same records (and the same in-flight index) as the sorted
// passes, at the bound and below it, with repeated Seqs among the records.
func TestIdemMakeRoomProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
		n := idemMaxPerScope - 2 + rapid.IntRange(0, 3).Draw(t, "over")
		if rapid.Bool().Draw(t, "small") {
			n = rapid.IntRange(1, 50).Draw(t, "n")
		}
		seqs := rapid.IntRange(1, n+1).Draw(t, "distinct seqs")
		build := func() *Model {
			m := &Model{}
			m.st.Idem = map[string]map[string]*IdemRec{"s": {}}
			m.st.IdemBySeq = map[uint64]string{}
			return m
		}
		a, b := build(), build()
		for i := range n {
			r := IdemRec{At: t0.Add(time.Duration(i%97) * time.Hour / 4), Seq: uint64(i*7919%seqs + 1), Done: i%3 != 0}
			k := fmt.Sprintf("key-%05d", (i*104729)%100000)
			ra, rb := r, r
			a.st.Idem["s"][k], b.st.Idem["s"][k] = &ra, &rb
			if !r.Done {
				a.st.IdemBySeq[r.Seq], b.st.IdemBySeq[r.Seq] = "s\x00"+k, "s\x00"+k
			}
		}
		at := t0.Add(time.Duration(rapid.IntRange(0, 30).Draw(t, "hours")) * time.Hour)
		a.idemMakeRoom("s", a.st.Idem["s"], at)
		b.idemMakeRoomSorted("s", b.st.Idem["s"], at)
		ka, kb := slices.Sorted(maps.Keys(a.st.Idem["s"])), slices.Sorted(maps.Keys(b.st.Idem["s"]))
		if !slices.Equal(ka, kb) || !maps.Equal(a.st.IdemBySeq, b.st.IdemBySeq) || len(a.st.Idem) != len(b.st.Idem) {
			t.Fatalf("%d records left, the sorted passes leave %d", len(ka), len(kb))
		}
	})
}
