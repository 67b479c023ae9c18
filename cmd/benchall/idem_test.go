package main

import (
	"strings"
	"testing"
)

// TestIdempotencyRows: the idempotency group reports the cost a key adds to a write in µs
// against its 5 µs target, with the unkeyed write in the note, the replay and the heap
// per record; without results it says the step gave none.
func TestIdempotencyRows(t *testing.T) {
	s := &suite{opts: options{skip: "inproc,wire,stream,journal,node,sim,memory"}, res: &Results{Benchmarks: map[string][]Bench{"idem": {
		{Name: "BenchmarkIdempotency/write", Metrics: map[string]float64{"added-ns/write": 1700, "baseline-ns/write": 1900}},
		{Name: "BenchmarkIdempotency/replay", Metrics: map[string]float64{"ns/op": 650}},
		{Name: "BenchmarkIdempotency/record-bytes", Metrics: map[string]float64{"B/record": 438}},
	}}}}
	got := map[string]Row{}
	for _, r := range s.rows() {
		if r.Group == "idempotency" {
			got[r.Metric] = r
		}
	}
	added := got["Idempotency-Key added to a write (POST /rfq, in process)"]
	if added.Value != 1.7 || added.Met == nil || !*added.Met || !strings.Contains(added.Note, "1.90 µs") {
		t.Fatalf("added row %+v", added)
	}
	if got["a replayed answer (the same key again)"].Value != 0.65 || got["heap per record, the answer's body included"].Value != 438 {
		t.Fatalf("rows %+v", got)
	}
	s.res.Benchmarks = map[string][]Bench{}
	for _, r := range s.rows() {
		if r.Group == "idempotency" && strings.HasPrefix(r.Note, "not measured") {
			return
		}
	}
	t.Fatal("no row says the idempotency step gave no result")
}
