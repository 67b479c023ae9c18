package main

import (
	"context"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

func cmdFaucet(e *env, args []string) error {
	fs := e.flags("faucet", "")
	e.keyFlag(fs)
	accept := fs.Bool("accept", false, "wait for the deposits, accept and sign them")
	c, ctx, cancel, err := e.connect(fs, args, nil)
	if err != nil {
		return err
	}
	defer cancel()
	draw, err := c.Faucet(e.keyed(ctx))
	if err != nil {
		return err
	}
	out := struct {
		*client.FaucetDraw
		Accepted []client.IncomingTransfer `json:"accepted,omitempty"`
	}{FaucetDraw: draw}
	if *accept && len(draw.Sent) > 0 {
		if out.Accepted, err = e.acceptDeposits(c, len(draw.Sent)); err != nil {
			return err
		}
	}
	return e.emit(out, func(w *tabwriter.Writer) {
		row(w, "SENT", "AMOUNT")
		for _, s := range draw.Sent {
			row(w, s.Symbol, s.Amount)
		}
		for _, s := range draw.Skipped {
			row(w, s.Symbol, "skipped: "+s.Reason)
		}
		if draw.RetryAfterSeconds > 0 {
			row(w, "retry after", time.Duration(draw.RetryAfterSeconds)*time.Second)
		}
		for _, a := range out.Accepted {
			row(w, "accepted", string(a.Amount)+" "+a.Symbol)
		}
	})
}

// acceptDeposits waits until at least want deposits are in the inbox, then accepts every
// deposit there and signs the transfer-accept actions.
func (e *env) acceptDeposits(c *client.Client, want int) ([]client.IncomingTransfer, error) {
	var in []client.IncomingTransfer
	err := e.waitFor("the deposits to arrive", 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		in, err = c.IncomingTransfers(ctx)
		return len(in) >= want, err
	})
	if err != nil {
		return nil, err
	}
	return in, e.acceptAll(c, in)
}

// acceptAll accepts the given deposits and signs every action the accepts return.
func (e *env) acceptAll(c *client.Client, in []client.IncomingTransfer) error {
	ctx, cancel := e.call()
	defer cancel()
	var actions []client.SignAction
	for _, tr := range in {
		acts, err := c.AcceptTransfer(ctx, tr.CID)
		if err != nil {
			return err
		}
		actions = append(actions, acts...)
	}
	return signResults(ctx, c, actions)
}

func cmdDeposits(e *env, args []string) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		return show(e, "deposits list", args, (*client.Client).IncomingTransfers, func(in []client.IncomingTransfer, w *tabwriter.Writer) {
			row(w, "CID", "SYMBOL", "AMOUNT", "SENDER")
			for _, tr := range in {
				row(w, tr.CID, tr.Symbol, tr.Amount, tr.Sender)
			}
		})
	case "accept":
		fs := e.flags("deposits accept", "(-all | CID...)")
		all := fs.Bool("all", false, "accept every deposit in the inbox")
		c, ctx, cancel, err := e.connect(fs, args, func() error {
			if *all == (fs.NArg() > 0) {
				return usagef("deposits accept: give -all or one or more CIDs")
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer cancel()
		in, err := c.IncomingTransfers(ctx)
		if err != nil {
			return err
		}
		if !*all {
			picked, missing := pick(in, fs.Args(), func(tr client.IncomingTransfer) string { return tr.CID })
			for _, cid := range missing { // accept it anyway: the desk answers 404 if it is gone
				picked = append(picked, client.IncomingTransfer{CID: cid})
			}
			in = picked
		}
		if err := e.acceptAll(c, in); err != nil {
			return err
		}
		return e.emit(in, func(w *tabwriter.Writer) {
			row(w, "ACCEPTED", "SYMBOL", "AMOUNT")
			for _, tr := range in {
				row(w, tr.CID, tr.Symbol, tr.Amount)
			}
		})
	}
	return usagef("deposits: unknown subcommand %q (list, accept)", sub)
}

func cmdWithdraw(e *env, args []string) error {
	fs := e.flags("withdraw", "")
	e.keyFlag(fs)
	symbol := fs.String("symbol", "", "catalog symbol")
	amount := fs.String("amount", "", "decimal amount")
	to := fs.String("to", "", "receiver's FULL party id")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	amt, err := client.ParseDecimal(*amount)
	if *symbol == "" || *to == "" || err != nil {
		return usagef("withdraw needs -symbol, -amount (a decimal such as 1.5) and -to (a full party id)")
	}
	c, ctx, cancel, err := e.session()
	if err != nil {
		return err
	}
	defer cancel()
	acts, err := c.Withdraw(e.keyed(ctx), client.WithdrawRequest{Symbol: *symbol, Amount: amt, Receiver: *to})
	if err != nil {
		return err
	}
	if err := signResults(ctx, c, acts); err != nil {
		return err
	}
	return e.emit(acts, func(w *tabwriter.Writer) {
		row(w, "withdrawn", string(amt)+" "+*symbol+" to "+*to)
	})
}

func cmdPending(e *env, args []string) error {
	return show(e, "pending", args, (*client.Client).PendingActions, func(acts []client.SignAction, w *tabwriter.Writer) {
		actionTable(acts)(w)
	})
}

func actionTable(acts []client.SignAction) func(w *tabwriter.Writer) {
	return func(w *tabwriter.Writer) {
		row(w, "ID", "PURPOSE", "TRADE", "EXPIRES", "DESCRIPTION")
		for _, a := range acts {
			row(w, a.ID, a.Purpose, or(a.TradeID, "-"), a.ExpiresAt.Format(time.RFC3339), a.Description)
		}
	}
}

func cmdSign(e *env, args []string) error {
	fs := e.flags("sign", "[ACTION_ID...]")
	c, ctx, cancel, err := e.connect(fs, args, nil)
	if err != nil {
		return err
	}
	defer cancel()
	acts, err := c.PendingActions(ctx)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		picked, missing := pick(acts, fs.Args(), func(a client.SignAction) string { return a.ID })
		if len(missing) > 0 {
			return usagef("sign: %d of the %d action ids given are not pending", len(missing), len(picked)+len(missing))
		}
		acts = picked
	}
	if err := signResults(ctx, c, acts); err != nil {
		return err
	}
	return e.emit(acts, func(w *tabwriter.Writer) {
		row(w, "SIGNED", "PURPOSE", "DESCRIPTION")
		for _, a := range acts {
			row(w, a.ID, a.Purpose, a.Description)
		}
		if len(acts) == 0 {
			row(w, "(nothing pending)", "", "")
		}
	})
}
