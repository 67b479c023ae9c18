package machine

import (
	"fmt"
	"testing"
)

// BenchmarkReservedOf measures what a spending prepare costs the desk for its reserved
// set and its one-at-a-time check: a walk over the live actions, the held requests and
// the calls in flight. 5,000 live actions of 100 parties (two inputs each) and 500 calls
// in flight.
func BenchmarkReservedOf(b *testing.B) {
	d, err := NewDesk(testConfig())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 5000 {
		id := fmt.Sprintf("act_%d", i)
		d.Actions[id] = &Action{ID: id, Party: fmt.Sprintf("p%d", i%100), PreparedID: "prep-" + id,
			Inputs: []string{fmt.Sprintf("00%08da", i), fmt.Sprintf("00%08db", i)}}
	}
	for i := range 500 {
		id := fmt.Sprintf("c%d", i)
		d.Pending[id] = &Continuation{Call: LedgerCall{CommandID: id, Op: OpPrepare, ActAs: fmt.Sprintf("p%d", i%100),
			Command: &Command{Allocate: &AllocateCmd{Send: true}}}}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := fmt.Sprintf("p%d", i%100)
		if len(d.reservedOf(p)) != 100 {
			b.Fatal("reserved set")
		}
		d.spendInFlight(p, "")
	}
}
