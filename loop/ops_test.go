package loop_test

import (
	"context"
	"testing"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
)

// TestReadOpsThroughTheLoop: the loop answers the operator's read of the whole desk, and
// a party asking the same query through Read is refused like any unknown query.
func TestReadOpsThroughTheLoop(t *testing.T) {
	d := startDesk(t, drive.Catalog("0.1", "10000"), 25, drive.NewEvents())
	p := d.Register("Ops Party")
	if err := d.loop.OpenSocket(context.Background(), 1, p.KeyHash(), false); err != nil {
		t.Fatal(err)
	}
	v, err := d.loop.ReadOps(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v.Counts.Parties < 1 || v.Counts.MakersOnline != 1 || len(v.Makers) != 1 || v.Makers[0].Hint != p.Hint || v.Makers[0].House {
		t.Fatalf("operator view %+v", v)
	}
	rep, err := d.loop.Read(context.Background(), p.KeyHash(), machine.QOps{Limit: 10})
	if err != nil || rep.Status != 404 {
		t.Fatalf("a party's Read of the operator view: %d %v", rep.Status, err)
	}
}
