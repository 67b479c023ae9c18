package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/deskco/rfqdesk/client"
)

// protectionFlags adds the -mmp-* flags: the maker protection the bot sets on the desk
// (PUT /maker/protection) once its identity works, and again for a new party. It is off
// unless -mmp-window is given (the desk's default, nothing set); then -mmp-max-fills and
// -mmp-max-notional are the limits (0 disables one) and -mmp-freeze how long a trip stops
// quoting (0: until someone resets it with `deskctl protection reset`; the bot never
// resets a freeze by itself: a trip is for a human to look at).
func protectionFlags(fs *flag.FlagSet) func() (*client.ProtectionSettings, error) {
	var s client.ProtectionSettings
	var notional string
	fs.IntVar(&s.WindowSeconds, "mmp-window", 0, "maker protection: the trailing window in seconds (0: protection not set)")
	fs.IntVar(&s.MaxFills, "mmp-max-fills", 0, "maker protection: fills in the window that freeze quoting (0: no limit)")
	fs.StringVar(&notional, "mmp-max-notional", "0", "maker protection: USD notional in the window that freezes quoting (decimal; 0: no limit)")
	fs.IntVar(&s.FreezeSeconds, "mmp-freeze", 60, "maker protection: seconds quoting stays frozen after a trip (0: until reset)")
	return func() (*client.ProtectionSettings, error) {
		d, err := client.ParseDecimal(notional)
		if err != nil {
			return nil, fmt.Errorf("-mmp-max-notional: %w", err)
		}
		if s.WindowSeconds < 0 || s.MaxFills < 0 || s.FreezeSeconds < 0 {
			return nil, fmt.Errorf("-mmp-window, -mmp-max-fills and -mmp-freeze must not be negative")
		}
		if s.WindowSeconds == 0 {
			return nil, nil
		}
		s.MaxNotionalUSD = d
		return &s, nil
	}
}

// ensureProtection sets the configured protection on the desk once per party (the reconcile
// retries it after a failure).
func (b *bot) ensureProtection(ctx context.Context) error {
	if b.cfg.protection == nil || b.protected == b.c.PartyID() {
		return nil
	}
	p, err := b.c.SetProtection(ctx, *b.cfg.protection)
	if err != nil {
		return fmt.Errorf("set maker protection: %w", err)
	}
	b.protected = b.c.PartyID()
	b.log.Info("maker protection set", "windowSeconds", p.WindowSeconds, "maxFills", p.MaxFills,
		"maxNotionalUsd", p.MaxNotionalUSD, "freezeSeconds", p.FreezeSeconds)
	return nil
}

// protectionTripped logs a trip: the desk revoked the bot's other quotes and refuses new
// ones (409 MMP_FROZEN) until the freeze ends, when the reconcile quotes again.
func (b *bot) protectionTripped(ev client.Event) error {
	t, err := ev.MakerProtection()
	if err != nil {
		return err
	}
	until := "reset"
	if t.FrozenUntil != nil {
		until = t.FrozenUntil.String()
	}
	b.log.Warn("maker protection tripped: quoting frozen", "triggered", t.Triggered, "until", until, "revoked", len(t.Revoked))
	return nil
}
