package main

import (
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// fundAll draws the faucet once (want tokens sent) and accepts every deposit.
func fundAll(t *testing.T, c *client.Client, want int) {
	t.Helper()
	draw, err := c.Faucet(ctx(t))
	if err != nil || len(draw.Sent) != want {
		t.Fatalf("faucet: %+v %v, want %d tokens", draw, err, want)
	}
	acceptDeposits(t, c)
}

// acceptDeposits accepts every deposit in c's inbox and signs the transfer-accepts.
func acceptDeposits(t *testing.T, c *client.Client) {
	t.Helper()
	in, err := c.IncomingTransfers(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range in {
		acts, err := c.AcceptTransfer(ctx(t), tr.CID)
		if err != nil {
			t.Fatal(err)
		}
		signAll(t, c, acts)
	}
}

// quoteRFQ has taker ask m alone for req, waits on m's stream s for the RFQ, and submits
// m's quote at price: it returns the RFQ and the quote with its allocations still unsigned.
func quoteRFQ(t *testing.T, taker, m *client.Client, s *client.Stream, req client.CreateRFQRequest, price client.Decimal) (*client.RFQ, *client.QuoteWithActions) {
	t.Helper()
	req.InvitedMakers = []string{m.Hint()}
	rfq, err := taker.CreateRFQ(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	await(t, s, "rfq.created", nil)
	q, err := m.SubmitQuote(ctx(t), client.QuoteRequest{RFQID: rfq.RFQID, Price: price})
	if err != nil {
		t.Fatal(err)
	}
	return rfq, q
}

// anchor signs m's allocations for q and waits on s until the quote is anchored.
func anchor(t *testing.T, m *client.Client, s *client.Stream, q *client.QuoteWithActions) {
	t.Helper()
	signAll(t, m, q.Actions)
	await(t, s, "quote.anchored", nil)
}
