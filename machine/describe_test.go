package machine

import (
	"testing"
	"time"
)

// TestDescribeOutputs pins the rendering every transcript, trace and replay report relies on.
func TestDescribeOutputs(t *testing.T) {
	if got := DescribeOutputs(Outputs{}); got != "" {
		t.Fatalf("empty outputs render as %q", got)
	}
	out := Outputs{
		Replies:  []Reply{{Seq: 3, Status: 409, Err: &APIError{Status: 409, Code: CodeRetryLater, Message: "busy"}}, {Seq: 4, Status: 204}},
		Bindings: []SocketBinding{{Socket: 2, Party: "p"}},
		Events:   []Event{{Party: "p", Type: EvRfqClosed, Payload: RfqIDPayload{RfqID: "r"}}, {Party: "p", Socket: 2, Type: "snapshot", Payload: []int{}}},
		Calls: []LedgerCall{{CommandID: "c1", Op: OpSubmit, ActAs: "op", Command: &Command{CancelAllocation: &CancelAllocationCmd{AllocationCID: "00"}}},
			{CommandID: "c2", Op: OpExecute, ActAs: "p", PreparedID: "prep"}},
		Closes:       []SocketClose{{Socket: 2, Code: CloseUnauthorized, Reason: "bye"}},
		NextDeadline: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	want := `reply 3: 409 RETRY_LATER "busy"
reply 4: 204 {}
bind socket 2 to p
event p: rfq.closed {"rfqId":"r"}
event p socket 2: snapshot []
ledger submit c1 as op {"cancelAllocation":{"allocationCid":"00"}}
ledger execute c2 as p prepared prep
close socket 2: 4401 "bye"
next deadline 2026-01-02T03:04:05Z
`
	if got := DescribeOutputs(out); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
