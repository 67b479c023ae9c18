package ledgersim

import (
	"sync"
	"time"
)

// Clock is the ledger's only source of time. Prepared transactions, locks, allocation
// windows and pending onboardings expire by it.
type Clock interface {
	Now() time.Time
}

// ManualClock is a Clock that moves only when told to: for tests and simulations.
// The zero value reads as the zero time; it is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t (backwards too, though the ledger assumes it rarely does).
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock forward by d and returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
