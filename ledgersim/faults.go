package ledgersim

import (
	"math/rand/v2"
	"sync"
	"time"
)

// CallInfo describes a ledger call to the fault plan.
type CallInfo struct {
	// Seq numbers the calls of one ledger from 1, in the order they consulted the plan.
	Seq        uint64
	Op         string // "prepare", "execute", "submit", "onboard", "complete-onboarding", "allocate-internal"
	ActAs      string
	CommandID  string
	PreparedID string
	PartyID    string // the hint or party id of party calls
	Kind       CommandKind
}

// Fault is what the fault plan decides for one call.
type Fault struct {
	// Delay is reported through Config.Sleep before the call returns (never slept
	// inside the lock).
	Delay time.Duration
	// Reject makes the call fail with this category and no effect (CategoryNone: no).
	// Meant for contention, unavailable, rejected and internal.
	Reject Category
	// LoseAnswer lets the call take effect but answers ErrUnknownOutcome; a retry with
	// the same command id then returns the original Update.
	LoseAnswer bool
}

// FaultPlan decides the fault of every ledger call (queries and Delist excepted).
type FaultPlan interface {
	Decide(call CallInfo) Fault
}

// FaultFunc adapts a function to a FaultPlan.
type FaultFunc func(CallInfo) Fault

// Decide calls f.
func (f FaultFunc) Decide(c CallInfo) Fault { return f(c) }

// FaultRates are the probabilities of a seeded fault plan, each in [0, 1]. The four
// rejection rates together must not exceed 1.
type FaultRates struct {
	Contention  float64
	Unavailable float64
	Rejected    float64
	Internal    float64
	LoseAnswer  float64 // of a call not rejected
	Delay       float64
	MaxDelay    time.Duration // a delay is uniform in (0, MaxDelay]
}

// SeededFaults is a FaultPlan drawing from a seeded generator: the same seed and the same
// sequence of calls give the same faults. Safe for concurrent use.
type SeededFaults struct {
	mu    sync.Mutex
	rng   *rand.Rand
	rates FaultRates
}

// NewSeededFaults returns a seeded fault plan with the given rates.
func NewSeededFaults(seed uint64, rates FaultRates) *SeededFaults {
	return &SeededFaults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rates: rates}
}

// Decide draws the fault of one call: always three draws, so one call's outcome never
// shifts the stream of the others.
func (s *SeededFaults) Decide(CallInfo) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rates
	u, lose, d := s.rng.Float64(), s.rng.Float64(), s.rng.Float64()
	var f Fault
	switch {
	case u < r.Contention:
		f.Reject = CategoryContention
	case u < r.Contention+r.Unavailable:
		f.Reject = CategoryUnavailable
	case u < r.Contention+r.Unavailable+r.Rejected:
		f.Reject = CategoryRejected
	case u < r.Contention+r.Unavailable+r.Rejected+r.Internal:
		f.Reject = CategoryInternal
	}
	if f.Reject == CategoryNone && lose < r.LoseAnswer {
		f.LoseAnswer = true
	}
	if r.MaxDelay > 0 && d < r.Delay {
		f.Delay = time.Duration(d/r.Delay*float64(r.MaxDelay)) + 1
	}
	return f
}

// decide consults the fault plan for one call.
func (l *Ledger) decide(c CallInfo) Fault {
	c.Seq = l.calls.Add(1)
	if l.cfg.FaultPlan == nil {
		return Fault{}
	}
	return l.cfg.FaultPlan.Decide(c)
}

// sleep reports a fault's delay to Config.Sleep, outside the lock.
func (l *Ledger) sleep(d time.Duration) {
	if d > 0 && l.cfg.Sleep != nil {
		l.cfg.Sleep(d)
	}
}

// faulted runs one public call under the fault plan: an injected rejection answers before
// the call runs, an injected delay follows it, and a lost answer hides a call that took
// effect behind an unknown outcome. Errors carry the operation c.Op.
func faulted[T any](l *Ledger, c CallInfo, call func() (T, error)) (T, error) {
	var zero T
	f := l.decide(c)
	if f.Reject != CategoryNone {
		l.sleep(f.Delay)
		return zero, newErr(f.Reject, c.Op, "injected fault")
	}
	v, err := call()
	l.sleep(f.Delay)
	if err != nil {
		return zero, withOp(err, c.Op)
	}
	if f.LoseAnswer {
		return zero, newErr(CategoryUnknownOutcome, c.Op, "answer lost (injected fault)")
	}
	return v, nil
}
