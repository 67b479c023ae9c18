package node_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// closedRFQs is how many closed RFQs, all within the retention window, the snapshot of
// BenchmarkStartToReady holds.
const closedRFQs = 100_000

// templates runs a real desk on dir through one settled lifecycle and one RFQ cancelled
// with a quote on it, closes it, and returns the replayed desk and the taker.
func templates(b *testing.B, dir string) (*machine.Desk, drive.Party) {
	opts := options(dir, nil)
	opts.CheckpointEvery = 0
	n, s, d := openSettling(b, opts)
	pair := d.Pairs(1, n.Loop)[0]
	m, tk := pair[0], pair[1]
	if err := lifecycle(n, s, m, tk, machine.Sell); err != nil {
		b.Fatal(err)
	}
	rfq := d.Must(d.Do(machine.CreateRFQ{Req: tk.Req(), Direction: machine.Buy, Qty: money.MustParse("0.01"),
		Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{m.Hint}, TTLSeconds: 60}), 200).(machine.RfqDTO)
	q := d.Must(d.Do(machine.SubmitQuote{Req: m.Req(), RFQID: rfq.RfqID, Price: money.MustParse("60000")}), 200).(machine.QuoteWithActionsDTO)
	d.Sign(m, q.Actions)
	d.Must(d.Do(machine.CancelRFQ{Req: tk.Req(), RFQID: rfq.RfqID}), 204)
	if err := n.Loop.CloseSocket(context.Background(), 1); err != nil {
		b.Fatal(err)
	}
	closeWithin(b, n, 30*time.Second)
	log := deskJournal(b, dir)
	defer log.Close()
	return replayDesk(b, log, false), tk
}

// fill adds closed RFQs to a desk, cloned from the filled and the cancelled RFQ a real run
// left, with fresh ids and times spread over the last nine minutes (so all are within the
// ten-minute retention): 70% filled (quote won, trade settled, the four allocate actions
// remembered as done), 30% cancelled with a quote. As the desk itself bounds them, only
// the trades named by the parties' trade lists (the newest HistoryRetention per party) and
// the newest HistoryRetention history rows are kept. Every retention deadline is queued.
func fill(b *testing.B, d *machine.Desk, count int) {
	var filled, cancelled *machine.RFQ
	for _, r := range d.RFQs {
		switch r.State {
		case machine.RFQFilled:
			filled = r
		case machine.RFQCancelled:
			cancelled = r
		}
	}
	if filled == nil || cancelled == nil || len(filled.Quotes) != 1 || len(cancelled.Quotes) != 1 {
		b.Fatalf("templates not found: filled %+v cancelled %+v", filled, cancelled)
	}
	fq, cq := d.Quotes[filled.Quotes[0]], d.Quotes[cancelled.Quotes[0]]
	ft := d.Trades[fq.Trade]
	if ft == nil || ft.State != machine.TradeSettled {
		b.Fatalf("settled trade template not found: %+v", ft)
	}
	var done []*machine.DoneAction
	for _, id := range append(append([]string(nil), fq.Actions...), ft.Actions...) {
		if x := d.DoneActions[id]; x != nil {
			done = append(done, x)
		}
	}
	taker, maker := d.Parties[ft.Taker], d.Parties[ft.Maker]
	var row machine.HistoryRow
	if len(taker.History) > 0 {
		row = taker.History[len(taker.History)-1]
	}
	keep := d.Cfg.HistoryRetention
	now := d.Now
	span := 9 * time.Minute
	addDeadline := func(at time.Time, kind machine.DeadlineKind, id string) {
		d.Deadlines.Next++
		d.Deadlines.Items = append(d.Deadlines.Items, machine.Deadline{At: at, Order: d.Deadlines.Next, Kind: kind, ID: id})
	}
	var trades []string
	for k := range count {
		at := now.Add(-span + time.Duration(k)*span/time.Duration(count))
		isFilled := k%10 < 7
		tr, tq := cancelled, cq
		if isFilled {
			tr, tq = filled, fq
		}
		r, q := *tr, *tq
		r.ID, q.ID = d.IDs.New("rfq_"), d.IDs.New("q_")
		r.Quotes, q.RFQ = []string{q.ID}, r.ID
		r.CreatedAt, r.ClosedAt, r.Deadline = at.Add(-5*time.Second), at, at.Add(55*time.Second)
		q.CreatedAt = at.Add(-3 * time.Second)
		q.Actions = nil
		for range tq.Actions {
			q.Actions = append(q.Actions, d.IDs.New("act_"))
		}
		if isFilled {
			t := *ft
			t.ID, t.RFQ, t.Quote = d.IDs.New("t_"), r.ID, q.ID
			t.AcceptedAt, t.SettledAt = at.Add(-time.Second), at
			t.Actions = nil
			for range ft.Actions {
				t.Actions = append(t.Actions, d.IDs.New("act_"))
			}
			q.Trade = t.ID
			trades = append(trades, t.ID)
			d.Trades[t.ID] = &t
			for i, id := range append(append([]string(nil), q.Actions...), t.Actions...) {
				if i < len(done) {
					x := *done[i]
					x.ID, x.Until = id, at.Add(d.Cfg.ActionLifetime)
					d.DoneActions[id] = &x
					addDeadline(x.Until, machine.DLDoneAction, id)
				}
			}
		} else if len(taker.History) > 0 {
			h := row
			h.ID, h.RFQ, h.At = d.IDs.New("h_"), r.ID, at
			taker.History = append(taker.History, h)
			if len(taker.History) > keep {
				taker.History = taker.History[len(taker.History)-keep:]
			}
		}
		d.RFQs[r.ID], d.Quotes[q.ID] = &r, &q
		addDeadline(at.Add(d.Cfg.ClosedRetention), machine.DLRFQRetention, r.ID)
	}
	// The desk keeps the trades its parties' lists name.
	if len(trades) > keep {
		for _, id := range trades[:len(trades)-keep] {
			delete(d.Trades, id)
		}
		trades = trades[len(trades)-keep:]
	}
	taker.Trades = append([]string(nil), trades...)
	maker.Trades = append([]string(nil), trades...)
	// A slice sorted by (time, order) is a valid min-heap.
	sort.Slice(d.Deadlines.Items, func(i, j int) bool {
		a, b := d.Deadlines.Items[i], d.Deadlines.Items[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		return a.Order < b.Order
	})
}

// BenchmarkStartToReady measures a restart of a desk whose newest snapshot holds 100,000
// closed RFQs: node.Open (the ledger journal replayed, the snapshot loaded and restored, the
// loop started) until the loop answered a first read. Baselines of the same run over the
// same snapshot: loading its bytes (journal read and checksum), and machine.Restore of
// them (the snapshot decoding). Target < 1 s (x-target = 1 s / s-ready ≥ 1 meets it).
func BenchmarkStartToReady(b *testing.B) {
	dir := b.TempDir()
	desk, taker := templates(b, dir)
	fill(b, desk, closedRFQs)
	state, err := desk.EncodeSnapshot() // what the loop's checkpoint saves
	if err != nil {
		b.Fatal(err)
	}
	log := deskJournal(b, dir)
	if err := log.SaveSnapshot(log.LastSeq(), state); err != nil {
		b.Fatal(err)
	}
	b.Logf("snapshot: %d closed RFQs, %d quotes, %d trades, %d done actions, %d deadlines, %d MB (binary snapshot)",
		len(desk.RFQs), len(desk.Quotes), len(desk.Trades), len(desk.DoneActions), len(desk.Deadlines.Items), len(state)>>20)
	for _, part := range []struct {
		name string
		v    any
	}{{"rfqs", desk.RFQs}, {"quotes", desk.Quotes}, {"trades", desk.Trades}, {"doneActions", desk.DoneActions},
		{"deadlines", desk.Deadlines}, {"parties", desk.Parties}} {
		if p, err := json.Marshal(part.v); err == nil {
			b.Logf("snapshot: %-12s %4d MB", part.name, len(p)>>20)
		}
	}

	var restoreNs float64
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok, err := log.LoadSnapshot(); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		_, data, _, err := log.LoadSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := machine.Restore(data); err != nil {
				b.Fatal(err)
			}
		}
		restoreNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	if err := log.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("open", func(b *testing.B) {
		opts := options(dir, nil)
		opts.Sink, opts.CheckpointEvery = drive.NewEvents(), 0
		b.ReportAllocs()
		var total time.Duration
		for b.Loop() {
			start := time.Now()
			n, err := node.Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			rep, err := n.Loop.Read(context.Background(), taker.KeyHash(), machine.QTxPending{})
			if err != nil || rep.Err != nil {
				b.Fatal(err, rep.Err)
			}
			total += time.Since(start)
			if n.Recovered.SnapshotSeq == 0 {
				b.Fatalf("not started from the snapshot: %+v", n.Recovered)
			}
			b.StopTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := n.Close(ctx); err != nil {
				b.Fatal(err)
			}
			cancel()
			b.StartTimer()
		}
		ready := total.Seconds() / float64(b.N)
		b.ReportMetric(ready, "s-ready")
		b.ReportMetric(1/ready, "x-target")
		if restoreNs > 0 {
			b.ReportMetric(ready*1e9/restoreNs, "x-restore")
		}
	})
}
