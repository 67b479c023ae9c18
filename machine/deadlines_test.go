package machine

import (
	"container/heap"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refQueue is the deadline heap as container/heap lays it out.
type refQueue struct{ q deadlineQueue }

func (r *refQueue) Len() int           { return len(r.q.Items) }
func (r *refQueue) Less(i, j int) bool { return r.q.less(i, j) }
func (r *refQueue) Swap(i, j int)      { r.q.Items[i], r.q.Items[j] = r.q.Items[j], r.q.Items[i] }
func (r *refQueue) Push(x any)         { r.q.Items = append(r.q.Items, x.(Deadline)) }
func (r *refQueue) Pop() any {
	last := r.q.Items[len(r.q.Items)-1]
	r.q.Items = r.q.Items[:len(r.q.Items)-1]
	return last
}

// TestDeadlineHeapLayoutIsContainerHeaps: the typed heap keeps container/heap's exact
// slice layout, so snapshots and digests of desks written before it stay the same.
func TestDeadlineHeapLayoutIsContainerHeaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q deadlineQueue
		ref := &refQueue{}
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "steps"); i < n; i++ {
			if len(q.Items) > 0 && rapid.IntRange(0, 2).Draw(t, "op") == 0 {
				got, want := q.pop(), heap.Pop(ref).(Deadline)
				if got != want {
					t.Fatalf("pop %+v, want %+v", got, want)
				}
			} else {
				at := t0.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "at")) * time.Second)
				q.add(at, DLAction, "x", 0)
				ref.q.Next++
				heap.Push(ref, Deadline{At: at, Order: ref.q.Next, Kind: DLAction, ID: "x"})
			}
			if len(q.Items) != len(ref.q.Items) {
				t.Fatalf("lengths differ")
			}
			for k := range q.Items {
				if q.Items[k] != ref.q.Items[k] {
					t.Fatalf("layout differs at %d", k)
				}
			}
		}
	})
}

// TestHousekeepingAtRoundsUpToTheSecond: forgetting deadlines move to the next whole
// second (never earlier), so those due within one second share a Tick.
func TestHousekeepingAtRoundsUpToTheSecond(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 0, 7, 0, time.UTC)
	for _, c := range []struct {
		in, want time.Time
	}{
		{base, base},
		{base.Add(time.Nanosecond), base.Add(time.Second)},
		{base.Add(999 * time.Millisecond), base.Add(time.Second)},
		{base.Add(-time.Nanosecond), base},
	} {
		if got := housekeepingAt(c.in); !got.Equal(c.want) {
			t.Errorf("housekeepingAt(%s) = %s, want %s", c.in.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), c.want.Format(time.RFC3339Nano))
		}
	}
}

// TestCompactDeadlinesKeepsWhatFires: rebuilding the queue without its spent deadlines
// leaves a valid heap that pops every other deadline in the same order as before.
func TestCompactDeadlinesKeepsWhatFires(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, err := NewDesk(testConfig())
		if err != nil {
			t.Fatal(err)
		}
		d.Actions["live"] = &Action{ID: "live"} // an action still queued: its expiry is not spent
		for i, n := 0, rapid.IntRange(0, 300).Draw(t, "n"); i < n; i++ {
			at := t0.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "at")) * time.Second)
			id := rapid.SampledFrom([]string{"live", "gone"}).Draw(t, "id")
			d.Deadlines.add(at, DLAction, id, 0)
			if rapid.IntRange(0, 3).Draw(t, "pop") == 0 {
				d.Deadlines.pop()
			}
		}
		var want []Deadline
		ref := deadlineQueue{Items: append([]Deadline(nil), d.Deadlines.Items...)}
		for len(ref.Items) > 0 {
			if dl := ref.pop(); !d.spent(dl) {
				want = append(want, dl)
			}
		}
		d.compactDeadlines()
		if len(d.Deadlines.Items) != len(want) {
			t.Fatalf("kept %d deadlines, want %d", len(d.Deadlines.Items), len(want))
		}
		for i, w := range want {
			if got := d.Deadlines.pop(); got != w {
				t.Fatalf("pop %d = %+v, want %+v", i, got, w)
			}
		}
	})
}

// TestCompactDue: a rebuild is due when the count of deadlines ever added passes a
// multiple of the queue's length rounded up to a power of two (at least
// compactDeadlinesFrom), and not otherwise.
func TestCompactDue(t *testing.T) {
	for _, c := range []struct {
		queued             int
		addedBefore, added uint64
		want               bool
	}{
		{queued: 10, addedBefore: 1000, added: 1023, want: false},
		{queued: 10, addedBefore: 1023, added: 1024, want: true},
		{queued: 10, addedBefore: 1023, added: 1030, want: true},
		{queued: 10, addedBefore: 1024, added: 1030, want: false},
		{queued: 1025, addedBefore: 1024, added: 2047, want: false}, // period 2048
		{queued: 1025, addedBefore: 2047, added: 2048, want: true},
		{queued: 5000, addedBefore: 8191, added: 8192, want: true}, // period 8192
		{queued: 5000, addedBefore: 4095, added: 4096, want: false},
	} {
		d := &Desk{Deadlines: deadlineQueue{Items: make([]Deadline, c.queued), Next: c.added}}
		if got := d.compactDue(c.addedBefore); got != c.want {
			t.Errorf("%d queued, added %d -> %d: due %v, want %v", c.queued, c.addedBefore, c.added, got, c.want)
		}
	}
}
