package node_test

import (
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// feeHoldings returns how many holdings the fee party has and their total per instrument.
func feeHoldings(n *node.Node) (int, map[string]string) {
	hs := n.Ledger.L.Holdings(n.Config.FeeParty)
	sum := map[string]money.Decimal{}
	for _, h := range hs {
		sum[h.Instrument] = sum[h.Instrument].Add(h.Amount)
	}
	out := map[string]string{}
	for in, a := range sum {
		out[in] = a.String()
	}
	return len(hs), out
}

// TestFeeSweep: every settled trade leaves the fee party one more holding; the sweep
// merges them into one of the same total, and a restart replays the sweep to the same
// ledger.
func TestFeeSweep(t *testing.T) {
	const trades = 70 // above the sweep's threshold of 64
	dir := t.TempDir()
	n, s, d := openSettling(t, options(dir, nil))
	pair := d.Pairs(1, n.Loop)[0]
	m, tk := pair[0], pair[1]
	for i := range trades {
		side := machine.Sell
		if i%2 == 1 {
			side = machine.Buy
		}
		if err := lifecycle(n, s, m, tk, side); err != nil {
			t.Fatal(err)
		}
	}
	count, before := feeHoldings(n)
	if count != trades {
		t.Fatalf("the fee party holds %d holdings after %d trades", count, trades)
	}
	merged, err := n.SweepFees()
	if err != nil {
		t.Fatal(err)
	}
	count, after := feeHoldings(n)
	if merged != trades-1 || count != 1 {
		t.Errorf("merged %d, %d holdings left; want %d merged into 1", merged, count, trades-1)
	}
	if len(after) != len(before) || after["usdcx-registry"] != before["usdcx-registry"] {
		t.Errorf("fee totals %v, were %v", after, before)
	}
	if err := n.Ledger.L.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	closeNode(t, n)

	n, _ = open(t, dir, drive.NewEvents())
	defer closeNode(t, n)
	if c, totals := feeHoldings(n); c != 1 || totals["usdcx-registry"] != before["usdcx-registry"] {
		t.Errorf("after a restart: %d holdings, totals %v; want 1 of %v", c, totals, before)
	}
	if n.Recovered.DigestMismatch != 0 {
		t.Errorf("%d checkpoints differ after replay", n.Recovered.DigestMismatch)
	}
}
