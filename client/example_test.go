package client_test

import (
	"context"
	"errors"
	"log"

	"github.com/deskco/rfqdesk/client"
)

// A maker bot: load (or create) its identity, follow the stream, quote every RFQ at the
// desk's reference price and sign what the desk returns.
func Example() {
	ctx := context.Background()
	id, err := client.LoadIdentity("maker.json")
	var c *client.Client
	if err != nil {
		if c, err = client.New("http://127.0.0.1:8080"); err != nil {
			log.Fatal(err)
		}
		if id, err = c.Register(ctx, "example bot"); err != nil {
			log.Fatal(err)
		}
		if err := client.SaveIdentity("maker.json", id); err != nil {
			log.Fatal(err)
		}
	} else if c, err = client.FromIdentity(id, "http://127.0.0.1:8080"); err != nil {
		log.Fatal(err)
	}

	for {
		s := c.Subscribe(ctx, nil)
		for ev := range s.Events() {
			if ev.Type != client.EventRFQCreated {
				continue // EventConnected: a fresh snapshot follows; other events: bookkeeping
			}
			rfq, err := ev.RFQCreated()
			if err != nil || !rfq.Open {
				continue
			}
			price, ok, err := c.ReferencePrice(ctx, rfq.Base, rfq.Quote)
			if err != nil || !ok {
				continue
			}
			q, err := c.SubmitQuote(ctx, client.QuoteRequest{RFQID: rfq.RFQID, Price: price})
			if err != nil {
				log.Printf("quote %s: %v", rfq.RFQID, err)
				continue
			}
			results, err := c.SignAndExecute(ctx, q.Actions)
			for _, r := range results {
				if !r.OK() {
					log.Printf("action %s: %s", r.ActionID, r.Error)
				}
			}
			if err != nil {
				log.Printf("execute: %v", err)
			}
		}
		if !errors.Is(s.Err(), client.ErrUnauthorized) {
			return // cancelled
		}
		if _, err := c.RecoverKey(ctx); err != nil {
			log.Fatal(err)
		}
		if err := client.SaveIdentity("maker.json", c.Identity()); err != nil {
			log.Fatal(err)
		}
	}
}
