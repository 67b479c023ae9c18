package journal

import (
	"context"
	"os"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyStateMachine drives a log through appends, clean restarts,
// crashes that leave a torn frame at the end of the last segment,
// snapshots and pruning, checking after every step that it holds exactly
// the acknowledged records, in order, from its first sequence number.
func TestPropertyStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "journal-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		opts := Options{Sync: SyncNone, SegmentSize: int64(rapid.IntRange(64, 2048).Draw(rt, "segmentSize"))}
		l, err := OpenDir(dir, opts)
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Close() }()
		var model [][]byte // model[i] is record i+1
		var snaps []uint64

		reopen := func(rt *rapid.T) {
			l2, err := OpenDir(dir, opts)
			if err != nil {
				rt.Fatalf("reopen: %v", err)
			}
			l = l2
		}
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				recs := rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, 300), 1, 20).Draw(rt, "records")
				seq, err := l.Append(context.Background(), recs...)
				if err != nil {
					rt.Fatal(err)
				}
				model = append(model, recs...)
				if seq != uint64(len(model)) {
					rt.Fatalf("Append returned %d, want %d", seq, len(model))
				}
			},
			"restart": func(rt *rapid.T) {
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				reopen(rt)
				if l.Recovery().TornTail != nil {
					rt.Fatalf("clean restart found a torn tail: %+v", l.Recovery().TornTail)
				}
			},
			"crash": func(rt *rapid.T) {
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				// An unacknowledged frame, partly written.
				frame := appendFrame(nil, uint64(len(model)+1), rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "lost"))
				cut := rapid.IntRange(1, len(frame)-1).Draw(rt, "cut")
				segs, _ := os.ReadDir(dir)
				var last string
				for _, e := range segs {
					if _, ok := parseSegName(e.Name()); ok {
						last = e.Name()
					}
				}
				f, err := os.OpenFile(dir+"/"+last, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					rt.Fatal(err)
				}
				f.Write(frame[:cut])
				f.Close()
				reopen(rt)
				if l.Recovery().TornTail == nil {
					rt.Fatal("crash left no torn tail")
				}
			},
			"snapshot": func(rt *rapid.T) {
				seq := rapid.Uint64Range(l.FirstSeq()-1, uint64(len(model))).Draw(rt, "seq")
				if err := l.SaveSnapshot(seq, snapData(seq)); err != nil {
					rt.Fatal(err)
				}
				snaps = append(snaps, seq)
				slices.Sort(snaps)
				snaps = slices.Compact(snaps)
			},
			"prune": func(rt *rapid.T) {
				if err := l.Prune(); err != nil {
					rt.Fatal(err)
				}
			},
			"": func(rt *rapid.T) {
				if got := l.LastSeq(); got != uint64(len(model)) {
					rt.Fatalf("LastSeq = %d, want %d", got, len(model))
				}
				first := l.FirstSeq()
				next := first
				if err := l.ReadFrom(first, func(seq uint64, r []byte) error {
					if seq != next || string(r) != string(model[seq-1]) {
						rt.Fatalf("record %d (want %d) reads %q, want %q", seq, next, r, model[seq-1])
					}
					next++
					return nil
				}); err != nil {
					rt.Fatal(err)
				}
				if next != uint64(len(model))+1 {
					rt.Fatalf("read up to %d, want %d", next-1, len(model))
				}
				seq, data, ok, err := l.LoadSnapshot()
				switch {
				case err != nil:
					rt.Fatal(err)
				case !ok && first != 1:
					rt.Fatalf("no snapshot but the log starts at %d", first)
				case ok && (seq+1 < first || string(data) != string(snapData(seq)) || !slices.Contains(snaps, seq)):
					rt.Fatalf("snapshot %d %q with the log starting at %d", seq, data, first)
				case ok && seq != snaps[len(snaps)-1]:
					rt.Fatalf("snapshot %d is not the newest, %d", seq, snaps[len(snaps)-1])
				}
			},
		})
	})
}
