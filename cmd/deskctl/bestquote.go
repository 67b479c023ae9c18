package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// offlineGrace is how long every maker invited to the RFQ must stay offline before accept
// stops waiting for a quote none of them can send.
const offlineGrace = 3 * time.Second

// bestQuote waits for a live quote on the RFQ (my newest open one when rfqID is empty) and
// returns the best one for me, with its RFQ. It stops as soon as no quote can come: the RFQ
// closed or expired (saying which, and whether any quote came), or every invited maker has
// been offline for offlineGrace.
func (e *env) bestQuote(c *client.Client, rfqID string) (quoteID, onRFQ string, err error) {
	var best client.Quote
	what := "a quote"
	var offlineSince time.Time
	err = e.waitFor(what, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		rfqs, err := c.MyRFQs(ctx)
		if err != nil {
			return false, err
		}
		rfq := pickRFQ(rfqs, rfqID, onRFQ)
		if rfq == nil {
			switch {
			case rfqID != "":
				return false, fmt.Errorf("RFQ %s is not among my RFQs", rfqID)
			case onRFQ != "":
				return false, fmt.Errorf("RFQ %s is no longer readable: it closed more than the readability period ago", onRFQ)
			}
			if newest := newestRFQ(rfqs); newest != nil {
				return false, fmt.Errorf("no open RFQ: %s; create one with `deskctl rfq create`", whyClosed(newest, time.Now()))
			}
			return false, fmt.Errorf("no open RFQ: create one with `deskctl rfq create`")
		}
		if !rfq.Open {
			return false, fmt.Errorf("%s", whyClosed(rfq, time.Now()))
		}
		what, onRFQ = "a quote on "+rfq.RFQID, rfq.RFQID
		best = client.Quote{}
		for _, q := range rfq.Quotes {
			if q.Status == client.QuotePending && !q.Settling && (best.QuoteID == "" || better(rfq.Direction, q.Price, best.Price)) {
				best = q
			}
		}
		if best.QuoteID != "" {
			return true, nil
		}
		desk, err := c.Desk(ctx)
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(rfq.InvitedMakers, func(m string) bool { return slices.Contains(desk.Makers, m) }) {
			offlineSince = time.Time{}
			return false, nil
		}
		if offlineSince.IsZero() {
			offlineSince = time.Now()
		}
		if time.Since(offlineSince) >= offlineGrace {
			return false, fmt.Errorf("no quote can come on RFQ %s: none of the makers invited (%s) is online, and it expires at %s; `deskctl desk` lists the makers online",
				rfq.RFQID, strings.Join(rfq.InvitedMakers, ", "), rfq.Deadline.Local().Format(time.TimeOnly))
		}
		return false, nil
	})
	if err != nil {
		return "", "", err
	}
	e.progress("accepting quote %s of %s at %s", best.QuoteID, best.Maker, best.Price)
	return best.QuoteID, onRFQ, nil
}

// pickRFQ finds the RFQ to accept on: the one named, else the one already being waited
// on (open or not), else my newest open one.
func pickRFQ(rfqs []client.RFQ, named, tracked string) *client.RFQ {
	want := named
	if want == "" {
		want = tracked
	}
	var pick *client.RFQ
	for i := range rfqs {
		r := &rfqs[i]
		switch {
		case want != "":
			if r.RFQID == want {
				return r
			}
		case r.Open && (pick == nil || r.Deadline.After(pick.Deadline)):
			pick = r
		}
	}
	return pick
}

// newestRFQ is the RFQ with the latest deadline, open or not.
func newestRFQ(rfqs []client.RFQ) *client.RFQ {
	var out *client.RFQ
	for i := range rfqs {
		if out == nil || rfqs[i].Deadline.After(out.Deadline) {
			out = &rfqs[i]
		}
	}
	return out
}

// whyClosed says what happened to a closed RFQ in the taker's terms.
func whyClosed(r *client.RFQ, now time.Time) string {
	makers := strings.Join(r.InvitedMakers, ", ")
	filled := slices.ContainsFunc(r.Quotes, func(q client.Quote) bool { return q.Status == client.QuoteWon })
	switch {
	case filled:
		return fmt.Sprintf("RFQ %s is filled: `deskctl trades` shows the trade", r.RFQID)
	case now.Before(r.Deadline):
		return fmt.Sprintf("RFQ %s was cancelled", r.RFQID)
	case len(r.Quotes) == 0:
		return fmt.Sprintf("RFQ %s expired at %s with no quote: the makers invited (%s) declined or were offline",
			r.RFQID, r.Deadline.Local().Format(time.TimeOnly), makers)
	default:
		return fmt.Sprintf("RFQ %s expired at %s: none of its %d quote(s) was accepted in time", r.RFQID, r.Deadline.Local().Format(time.TimeOnly), len(r.Quotes))
	}
}
