package sim

import (
	"container/heap"
	"time"
)

// event is one thing that happens at a virtual time. Events at the same time run in the
// order of a tie-break drawn from the run's seed, so the seed alone decides every
// interleaving; the insertion counter only separates equal draws.
type event struct {
	at  time.Time
	tie uint64
	n   uint64
	fn  func()
}

// queue is a min-heap of events by (at, tie, n).
type queue []*event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.n < b.n
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

// Push is heap plumbing.
func (q *queue) Push(x any) { *q = append(*q, x.(*event)) }

// Pop is heap plumbing.
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// maxQueued bounds the scheduler: a run that piles up more events than this is broken.
const maxQueued = 1 << 20

// at schedules fn at virtual time t (never before now).
func (s *Sim) at(t time.Time, fn func()) {
	if t.Before(s.now) {
		t = s.now
	}
	s.seq++
	heap.Push(&s.q, &event{at: t, tie: s.rng.Uint64(), n: s.seq, fn: fn})
	if len(s.q) > maxQueued {
		s.failf(Safety, "the scheduler holds more than %d events", maxQueued)
	}
}

// after schedules fn d after now.
func (s *Sim) after(d time.Duration, fn func()) { s.at(s.now.Add(d), fn) }

// next pops the earliest event and moves the virtual clock to it.
func (s *Sim) next() (*event, bool) {
	if len(s.q) == 0 {
		return nil, false
	}
	e := heap.Pop(&s.q).(*event)
	s.now = e.at
	s.clock.Set(e.at)
	return e, true
}
