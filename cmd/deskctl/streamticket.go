package main

import (
	"context"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// cmdStreamTicket is `deskctl stream-ticket`: a one-shot ticket for the party's stream
// (POST /maker/stream/ticket), with the stream address that carries it, for a browser or
// a tool that cannot send X-API-Key on the upgrade. The ticket opens one socket within
// 30 s.
func cmdStreamTicket(e *env, args []string) error {
	fs := e.flags("stream-ticket", "")
	var url string
	fetch := func(c *client.Client, ctx context.Context) (*client.StreamTicket, error) {
		t, err := c.StreamTicket(ctx)
		if err == nil {
			url = c.StreamURLWithTicket(t.Ticket)
		}
		return t, err
	}
	return query(e, fs, args, fetch, func(t *client.StreamTicket, w *tabwriter.Writer) {
		row(w, "ticket", t.Ticket)
		row(w, "expires at", t.ExpiresAt.UTC().Format(time.RFC3339))
		row(w, "stream", url)
	})
}
