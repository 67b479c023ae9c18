package node_test

import (
	"context"
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/node"
)

// fundedPair registers a maker and a taker and funds each with two faucet draws.
func fundedPair(d drive.Driver) (maker, taker drive.Party) {
	maker, taker = d.Register("Maker"), d.Register("Taker")
	d.Fund(maker, 2)
	d.Fund(taker, 2)
	return maker, taker
}

// settleOne opens the maker's socket 1 on n, settles one trade between maker and taker
// (both funded) and, with waiting, accepts a second one left waiting for the taker's
// signatures. It closes the socket again (a restart closes every socket; closing it first
// leaves only durable state to compare) and returns the waiting trade (zero without
// waiting) and what each party sees of the desk, for sameDesk after a restart or a take
// over.
func settleOne(t *testing.T, n *node.Node, d drive.Driver, events *drive.Events, maker, taker drive.Party, waiting bool) (machine.TradeWithActionsDTO, map[string]string) {
	t.Helper()
	if err := n.Loop.OpenSocket(context.Background(), 1, maker.KeyHash(), false); err != nil {
		t.Fatal(err)
	}
	first := d.Trade(events, maker, taker)
	d.Sign(taker, first.Actions)
	events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil)
	var second machine.TradeWithActionsDTO
	if waiting {
		second = d.Trade(events, maker, taker)
	}
	if err := n.Loop.CloseSocket(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	return second, map[string]string{maker.ID: state(d, maker), taker.ID: state(d, taker)}
}

// sameDesk fails t for each party that sees another desk through d than it saw before
// (settleOne's second answer); when says after what ("the restart").
func sameDesk(t *testing.T, d drive.Driver, before map[string]string, when string, parties ...drive.Party) {
	t.Helper()
	for _, p := range parties {
		if got := state(d, p); got != before[p.ID] {
			t.Errorf("%s sees another desk after %s:\n got %s\nwant %s", p.Hint, when, got, before[p.ID])
		}
	}
}

// signSettles signs actions as the taker, waits for the trade to settle and checks the
// ledger's invariants.
func signSettles(t *testing.T, n *node.Node, d drive.Driver, events *drive.Events, taker drive.Party, actions []machine.SignActionDTO) {
	t.Helper()
	d.Sign(taker, actions)
	events.WaitFor(t, taker.ID, machine.EvTradeSettled, nil)
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
