package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

func cmdRFQ(e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("rfq: create | mine | cancel ID | history")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "create":
		return rfqCreate(e, args)
	case "mine":
		return show(e, "rfq mine", args, (*client.Client).MyRFQs, func(rfqs []client.RFQ, w *tabwriter.Writer) {
			row(w, "RFQ", "SIDE", "QTY", "PAIR", "OPEN", "DEADLINE", "QUOTE", "MAKER", "PRICE", "STATUS")
			for _, r := range rfqs {
				pair := r.Base + "/" + r.Quote
				if len(r.Quotes) == 0 {
					row(w, r.RFQID, r.Direction, r.Qty, pair, r.Open, r.Deadline.Format(time.RFC3339), "-", "-", "-", "-")
				}
				for _, q := range r.Quotes {
					row(w, r.RFQID, r.Direction, r.Qty, pair, r.Open, r.Deadline.Format(time.RFC3339), q.QuoteID, q.Maker, q.Price, q.Status)
				}
			}
		})
	case "cancel":
		return onID(e, "rfq cancel", "RFQ_ID", "cancelled", args, (*client.Client).CancelRFQ)
	case "history":
		fs := e.flags("rfq history", "")
		limit := fs.Int("limit", 0, "newest N rows (1-500; default the desk's 100)")
		history := func(c *client.Client, ctx context.Context) ([]client.RFQHistory, error) {
			return c.RFQHistory(ctx, *limit)
		}
		return query(e, fs, args, history, func(h []client.RFQHistory, w *tabwriter.Writer) {
			row(w, "AT", "RFQ", "KIND", "SIDE", "QTY", "PAIR", "QUOTES", "BEST", "REASON")
			for _, x := range h {
				row(w, x.At.Format(time.RFC3339), x.RFQID, x.Kind, x.Direction, x.Qty, x.Base+"/"+x.Quote, x.QuoteCount, or(string(x.BestPrice), "-"), x.Reason)
			}
		})
	}
	return usagef("rfq: unknown subcommand %q (create, mine, cancel, history)", sub)
}

func rfqCreate(e *env, args []string) error {
	fs := e.flags("rfq create", "")
	e.keyFlag(fs)
	side := fs.String("side", "", "SELL (you sell the base) or BUY (you buy the base)")
	qty := fs.String("qty", "", "quantity of the base (decimal)")
	base := fs.String("base", "", "base instrument symbol")
	quote := fs.String("quote", "", "quote instrument symbol")
	makers := fs.String("makers", "", "comma-separated maker hints (default: every maker online now)")
	ttl := fs.Int("ttl", 60, "seconds until the RFQ expires")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	dir := client.Direction(strings.ToUpper(*side))
	q, err := client.ParseDecimal(*qty)
	if (dir != client.Sell && dir != client.Buy) || err != nil || *base == "" || *quote == "" {
		return usagef("rfq create needs -side SELL|BUY, -qty (a decimal), -base and -quote")
	}
	c, ctx, cancel, err := e.session()
	if err != nil {
		return err
	}
	defer cancel()
	var invited []string
	for _, m := range strings.Split(*makers, ",") {
		if m = strings.TrimSpace(m); m != "" {
			invited = append(invited, m)
		}
	}
	if len(invited) == 0 {
		d, err := c.Desk(ctx)
		if err != nil {
			return err
		}
		if len(d.Makers) == 0 {
			return fmt.Errorf("no maker is online to invite")
		}
		invited = d.Makers
	}
	r, err := c.CreateRFQ(e.keyed(ctx), client.CreateRFQRequest{Direction: dir, Qty: q, Base: *base, Quote: *quote, InvitedMakers: invited, TTLSeconds: *ttl})
	if err != nil {
		return err
	}
	return e.emit(r, func(w *tabwriter.Writer) {
		row(w, "rfq", r.RFQID)
		row(w, "side", r.Direction)
		row(w, "qty", string(r.Qty)+" "+r.Base+" for "+r.Quote)
		row(w, "invited", strings.Join(r.InvitedMakers, ", "))
		row(w, "fee bps", r.FeeBps)
		row(w, "deadline", r.Deadline.Format(time.RFC3339))
	})
}

func cmdQuote(e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("quote: submit -rfq ID -price P | delete QUOTE_ID | delete-all | decline -reason R RFQ_ID")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "submit":
		fs := e.flags("quote submit", "")
		e.keyFlag(fs)
		rfq := fs.String("rfq", "", "RFQ id")
		price := fs.String("price", "", "quote-instrument amount per 1 base (decimal)")
		validFor := fs.Duration("valid-for", 0, "quote lifetime (default: the desk's, capped at the deadline)")
		if err := e.parse(fs, args); err != nil {
			return err
		}
		p, err := client.ParseDecimal(*price)
		if *rfq == "" || err != nil {
			return usagef("quote submit needs -rfq and -price (a decimal)")
		}
		c, ctx, cancel, err := e.session()
		if err != nil {
			return err
		}
		defer cancel()
		req := client.QuoteRequest{RFQID: *rfq, Price: p}
		if *validFor > 0 {
			req.ValidUntil = time.Now().Add(*validFor)
		}
		q, err := c.SubmitQuote(e.keyed(ctx), req)
		if err != nil {
			return err
		}
		if err := signResults(ctx, c, q.Actions); err != nil {
			return err
		}
		return e.emit(q, func(w *tabwriter.Writer) {
			row(w, "quote", q.QuoteID)
			row(w, "rfq", q.RFQID)
			row(w, "price", q.Price)
			row(w, "valid until", q.ValidUntil.Format(time.RFC3339))
			row(w, "signed", fmt.Sprintf("%d allocation(s); the quote is live once they land", len(q.Actions)))
		})
	case "delete":
		return onID(e, "quote delete", "QUOTE_ID", "deleted", args, (*client.Client).CancelQuote)
	case "delete-all":
		fs := e.flags("quote delete-all", "")
		e.keyFlag(fs)
		c, ctx, cancel, err := e.connect(fs, args, func() error {
			if fs.NArg() != 0 {
				return usagef("quote delete-all takes no argument")
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer cancel()
		res, err := c.CancelAllQuotes(e.keyed(ctx))
		if err != nil {
			return err
		}
		return e.emit(res, func(w *tabwriter.Writer) {
			row(w, "revoked", strings.Join(res.Revoked, " "))
			row(w, "settling (left)", strings.Join(res.Settling, " "))
		})
	case "decline":
		fs := e.flags("quote decline", "RFQ_ID")
		e.keyFlag(fs)
		reason := fs.String("reason", "", "price, size, inventory, instrument or other")
		c, ctx, cancel, err := e.connect(fs, args, func() error {
			if fs.NArg() != 1 || *reason == "" {
				return usagef("quote decline -reason R RFQ_ID")
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer cancel()
		if err := c.DeclineRFQ(e.keyed(ctx), fs.Arg(0), *reason); err != nil {
			return err
		}
		out := map[string]string{"declined": fs.Arg(0), "reason": *reason}
		return e.emit(out, func(w *tabwriter.Writer) {
			row(w, "declined", fs.Arg(0))
			row(w, "reason", *reason)
		})
	}
	return usagef("quote: unknown subcommand %q (submit, delete, delete-all, decline)", sub)
}

// better reports whether price a is better than b for the taker of an RFQ in direction dir:
// higher when selling, lower when buying. Decimal strings compare exactly as big.Rat.
func better(dir client.Direction, a, b client.Decimal) bool {
	x, _ := new(big.Rat).SetString(string(a))
	y, _ := new(big.Rat).SetString(string(b))
	if x == nil || y == nil {
		return false
	}
	if dir == client.Sell {
		return x.Cmp(y) > 0
	}
	return x.Cmp(y) < 0
}

func cmdAccept(e *env, args []string) error {
	fs := e.flags("accept", "[QUOTE_ID]")
	e.keyFlag(fs)
	rfqID := fs.String("rfq", "", "accept the best live quote of this RFQ (default: my newest open RFQ)")
	noWait := fs.Bool("no-wait", false, "return once the trade is settling, without waiting for settlement")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("accept [QUOTE_ID]")
	}
	c, _, err := e.client()
	if err != nil {
		return err
	}
	quoteID, onRFQ := fs.Arg(0), *rfqID
	if quoteID == "" {
		if quoteID, onRFQ, err = e.bestQuote(c, *rfqID); err != nil {
			return err
		}
	}
	ctx, cancel := e.call()
	defer cancel()
	tr, err := c.AcceptQuote(e.keyed(ctx), quoteID)
	if err != nil {
		return err
	}
	if err := signResults(ctx, c, tr.Actions); err != nil {
		return err
	}
	trade := tr.Trade
	if !*noWait {
		if trade, err = e.awaitSettlement(c, tr.TradeID, onRFQ); err != nil {
			return err
		}
	}
	return e.emit(trade, tradeTable([]client.Trade{trade}))
}

// awaitSettlement signs whatever the desk queues for the trade and waits until it is in
// GET /trades, or failed (in GET /rfq-history).
func (e *env) awaitSettlement(c *client.Client, tradeID, rfqID string) (client.Trade, error) {
	var settled client.Trade
	since := time.Now().Add(-2 * time.Second) // small clock-skew margin; an older failure is another trade's
	err := e.waitFor("trade "+tradeID+" to settle", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		trades, err := c.Trades(ctx, 20)
		if err != nil {
			return false, err
		}
		for _, t := range trades {
			if t.TradeID == tradeID {
				settled = t
				return true, nil
			}
		}
		if pending, err := c.PendingActions(ctx); err == nil && c.PrivateKey() != nil {
			var mine []client.SignAction
			for _, a := range pending {
				if a.TradeID == tradeID {
					mine = append(mine, a)
				}
			}
			if err := signResults(ctx, c, mine); err != nil {
				e.progress("signing a queued action of the trade: %v", err)
			}
		}
		hist, err := c.RFQHistory(ctx, 20)
		if err != nil {
			return false, err
		}
		for _, h := range hist {
			if rfqID != "" && h.RFQID == rfqID && h.Kind == client.HistoryFailed && h.At.After(since) {
				return false, fmt.Errorf("trade %s failed: %s", tradeID, h.Reason)
			}
		}
		return false, nil
	})
	return settled, err
}

func tradeTable(trades []client.Trade) func(w *tabwriter.Writer) {
	return func(w *tabwriter.Writer) {
		row(w, "TRADE", "STATUS", "SIDE", "QTY", "PAIR", "PRICE", "FEE", "TAKER", "MAKER", "SETTLED")
		for _, t := range trades {
			at := "-"
			if !t.SettledAt.IsZero() {
				at = t.SettledAt.Format(time.RFC3339)
			}
			row(w, t.TradeID, t.Status, t.Direction, t.Qty, t.Base+"/"+t.Quote, t.Price, t.Fee, t.Taker, t.Maker, at)
		}
	}
}

func cmdTrades(e *env, args []string) error {
	fs := e.flags("trades", "")
	limit := fs.Int("limit", 0, "newest N trades (1-500; default the desk's 100)")
	asMaker := fs.Bool("maker", false, "only trades where I was the maker (GET /maker/trades)")
	trades := func(c *client.Client, ctx context.Context) ([]client.Trade, error) {
		if *asMaker {
			return c.MakerTrades(ctx, *limit)
		}
		return c.Trades(ctx, *limit)
	}
	return query(e, fs, args, trades, func(trades []client.Trade, w *tabwriter.Writer) { tradeTable(trades)(w) })
}

func cmdStream(e *env, args []string) error {
	fs := e.flags("stream", "")
	types := fs.String("types", "", "comma-separated event types to show (default: all)")
	count := fs.Int("count", 0, "stop after this many events shown (0: until interrupted)")
	forever := fs.Bool("forever", true, "ignore -timeout: tail until interrupted or -count is reached")
	noResume := fs.Bool("no-resume", false, "reconnect with a fresh snapshot rather than resuming after the last seq seen")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	c, _, err := e.client()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, t := range strings.Split(*types, ",") {
		if t = strings.TrimSpace(t); t != "" {
			want[t] = true
		}
	}
	ctx := e.ctx
	if !*forever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	s := c.Subscribe(ctx, &client.StreamOptions{NoResume: *noResume})
	defer s.Close()
	shown := 0
	for ev := range s.Events() {
		if len(want) > 0 && !want[ev.Type] {
			continue
		}
		if e.json {
			b, _ := json.Marshal(ev)
			fmt.Fprintln(e.stdout, string(b))
		} else {
			seq := ""
			if ev.Seq != 0 {
				seq = fmt.Sprintf("#%d ", ev.Seq)
			}
			fmt.Fprintf(e.stdout, "%s  %-16s %s%s\n", time.Now().UTC().Format("15:04:05.000"), ev.Type, seq, summarize(ev))
		}
		shown++
		if *count > 0 && shown >= *count {
			return nil
		}
	}
	err = s.Err()
	if ctx.Err() == context.DeadlineExceeded && e.ctx.Err() == nil {
		return fmt.Errorf("%w: stream ran for %s", errTimeout, e.timeout)
	}
	if e.ctx.Err() != nil {
		return nil // interrupted: a normal end
	}
	return err
}

// summarize renders an event's payload on one line: its fields as key=value, sorted.
func summarize(ev client.Event) string {
	var m map[string]any
	if json.Unmarshal(ev.Payload, &m) != nil {
		return string(ev.Payload)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k == "hash" {
			continue // noise for a human
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := json.Marshal(m[k])
		parts = append(parts, k+"="+strings.Trim(string(v), `"`))
	}
	return strings.Join(parts, " ")
}
