package node

import (
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
)

// TestDigesterMatchesDigest checks that hashing the snapshot on the digester's goroutine,
// snapshot after snapshot, gives machine.Desk.Digest.
func TestDigesterMatchesDigest(t *testing.T) {
	desk := newTestDesk(t, testDeskConfig())
	g := newDigester()
	defer g.close()
	for i := range 3 {
		want, err := desk.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.start(desk); err != nil {
			t.Fatal(err)
		}
		if got := g.sum(); string(got) != string(want[:]) {
			t.Fatalf("snapshot %d: digester %x, Digest %x", i, got, want)
		}
		machine.Apply(desk, machine.Envelope{Seq: uint64(i + 2), Input: machine.SocketOpened{Socket: 1}})
	}
}

// testDeskConfig is a desk configuration for the package's own tests.
func testDeskConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Operator, cfg.FeeParty = "operator::1220aa", "fees::1220bb"
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	return cfg
}

// newTestDesk is a fresh desk of cfg.
func newTestDesk(t *testing.T, cfg machine.Config) *machine.Desk {
	t.Helper()
	desk, err := machine.NewDesk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return desk
}
