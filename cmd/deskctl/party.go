package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

func cmdWait(e *env, args []string) error {
	fs := e.flags("wait", "")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	c, err := e.anonymous()
	if err != nil {
		return err
	}
	return e.waitFor("the desk at "+c.BaseURL(), 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		cx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		// The keyless liveness probe: polling a keyed route would count as a 401 each time.
		// Any HTTP answer means the desk is serving (an older desk answers 404).
		err := c.Healthz(cx)
		if isTransport(err) {
			return false, ctx.Err()
		}
		return true, nil
	})
}

func cmdRegister(e *env, args []string) error {
	fs := e.flags("register", "")
	name := fs.String("name", "deskctl", "display name (1-64 letters, digits, space, - _ .); the hint derives from it")
	force := fs.Bool("force", false, "overwrite an existing identity file")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	if _, err := os.Stat(e.identity); err == nil && !*force {
		return usagef("%s exists: it holds a party's keys; pass -force to replace it, or -identity for another file", e.identity)
	}
	c, err := e.anonymous()
	if err != nil {
		return err
	}
	ctx, cancel := e.call()
	defer cancel()
	id, err := c.Register(ctx, *name)
	if err != nil {
		return err
	}
	if err := client.SaveIdentity(e.identity, id); err != nil {
		return fmt.Errorf("the party is registered but its identity could not be saved (API key %s): %w", id.APIKey, err)
	}
	return e.emit(map[string]string{"partyId": id.PartyID, "hint": id.Hint, "identity": e.identity}, func(w *tabwriter.Writer) {
		row(w, "registered", id.Hint)
		row(w, "party", id.PartyID)
		row(w, "identity", e.identity+" (mode 0600: it holds your private key and API key)")
	})
}

func cmdRecover(e *env, args []string) error {
	fs := e.flags("recover", "")
	c, ctx, cancel, err := e.connect(fs, args, func() error {
		if e.apiKey != "" {
			return usagef("recover needs the identity file (the party key), not -api-key")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := c.RecoverKey(ctx); err != nil {
		return err
	}
	if err := client.SaveIdentity(e.identity, c.Identity()); err != nil {
		return fmt.Errorf("the key was rotated but could not be saved (new API key %s): %w", c.APIKey(), err)
	}
	return e.emit(map[string]string{"partyId": c.PartyID(), "identity": e.identity}, func(w *tabwriter.Writer) {
		row(w, "rotated", "the API key of "+c.PartyID()+" is new; the old one stopped working")
		row(w, "identity", e.identity)
	})
}

func cmdStatus(e *env, args []string) error {
	return show(e, "status", args, (*client.Client).Status, func(st *client.MakerStatus, w *tabwriter.Writer) {
		row(w, "party", st.PartyID)
		row(w, "hint", st.Hint)
		row(w, "invitable", st.Invitable)
		row(w, "pending actions", st.PendingActions)
		row(w, "service activated", st.ServiceActivated)
	})
}

func cmdDesk(e *env, args []string) error {
	return show(e, "desk", args, (*client.Client).Desk, func(d *client.DeskInfo, w *tabwriter.Writer) {
		row(w, "MIN NOTIONAL USD", "FEE BPS")
		for _, t := range d.FeeTiers {
			row(w, t.MinNotionalUSD, t.FeeBps)
		}
		row(w, "")
		row(w, "MAKERS ONLINE")
		for _, m := range d.Makers {
			row(w, m)
		}
	})
}

func cmdInstruments(e *env, args []string) error {
	return show(e, "instruments", args, (*client.Client).Instruments, func(ins []client.Instrument, w *tabwriter.Writer) {
		row(w, "SYMBOL", "DISPLAY", "DECIMALS")
		for _, in := range ins {
			row(w, in.Symbol, in.DisplaySymbol, in.Decimals)
		}
	})
}

func cmdBalances(e *env, args []string) error {
	return show(e, "balances", args, (*client.Client).Balances, func(b *client.Balances, w *tabwriter.Writer) {
		row(w, "SYMBOL", "AMOUNT")
		for _, h := range b.Holdings {
			row(w, h.Symbol, h.Amount)
		}
		if len(b.Holdings) == 0 {
			row(w, "(none)", "")
		}
	})
}

// signResults signs actions and fails unless every one executed or is in flight.
func signResults(ctx context.Context, c *client.Client, actions []client.SignAction) error {
	if len(actions) == 0 {
		return nil
	}
	if c.PrivateKey() == nil {
		return fmt.Errorf("%d action(s) need a signature but no identity file (private key) is in use", len(actions))
	}
	res, err := c.SignAndExecute(ctx, actions)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range res {
		if !r.OK() {
			errs = append(errs, fmt.Errorf("action %s: %s (retryable %v)", r.ActionID, r.Error, r.Retryable))
		}
	}
	return errors.Join(errs...)
}
