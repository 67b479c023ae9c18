// Package client is the Go client of the desk's public API: typed REST calls for every
// endpoint, the maker WebSocket stream, and the Ed25519 signing the desk's external-signing
// model asks of every party.
//
// It stands alone like a third-party client: it depends on the standard library and
// github.com/lxzan/gws only, defines its own wire types, and carries amounts as Decimal
// strings (validated against ^\d+(\.\d{1,10})?$), never as floats.
//
// A maker registers once, keeps its Identity in a 0600 file, then quotes what the stream
// brings:
//
//	c, _ := client.New("https://desk.example")
//	id, err := c.Register(ctx, "my bot")
//	if err != nil { ... }
//	if err := client.SaveIdentity("maker.json", id); err != nil { ... }
//
//	s := c.Subscribe(ctx, nil)
//	for ev := range s.Events() {
//		switch ev.Type {
//		case client.EventConnected:
//			// a fresh snapshot follows: forget the local view
//		case client.EventRFQCreated:
//			rfq, _ := ev.RFQCreated()
//			q, err := c.SubmitQuote(ctx, client.QuoteRequest{RFQID: rfq.RFQID, Price: "101.5"})
//			if err == nil {
//				_, err = c.SignAndExecute(ctx, q.Actions)
//			}
//		}
//	}
//	if errors.Is(s.Err(), client.ErrUnauthorized) {
//		_, err = c.RecoverKey(ctx) // then save c.Identity() and subscribe again
//	}
//
// Errors of REST calls are *APIError (the desk answered non-2xx; match with IsCode and
// Status) or *TransportError (no answer).
package client
