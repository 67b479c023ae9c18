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
