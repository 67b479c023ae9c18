package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskco/rfqdesk/client"
)

// cmdProtection is `deskctl protection show | set -window S -max-fills N -max-notional USD
// -freeze S | reset`: the caller's maker protection (docs/api.md, "Maker protection").
func cmdProtection(e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("protection: show | set -window S -max-fills N -max-notional USD -freeze S | reset")
	}
	sub, args := args[0], args[1:]
	fs := e.flags("protection "+sub, "")
	var settings client.ProtectionSettings
	var notional string
	if sub == "set" {
		fs.IntVar(&settings.WindowSeconds, "window", -1, "the trailing window in seconds (0 counts nothing; required)")
		fs.IntVar(&settings.MaxFills, "max-fills", 0, "fills in the window that trip the protection (0: no limit)")
		fs.StringVar(&notional, "max-notional", "0", "USD notional in the window that trips the protection (decimal; 0: no limit)")
		fs.IntVar(&settings.FreezeSeconds, "freeze", 0, "seconds quoting stays frozen after a trip (0: until reset)")
	}
	var call func(c *client.Client) (*client.Protection, error)
	c, ctx, cancel, err := e.connect(fs, args, func() error {
		if fs.NArg() != 0 {
			return usagef("protection %s takes no argument", sub)
		}
		switch sub {
		case "show", "reset":
			return nil
		case "set":
			d, err := client.ParseDecimal(notional)
			if err != nil || settings.WindowSeconds < 0 || settings.MaxFills < 0 || settings.FreezeSeconds < 0 {
				return usagef("protection set needs -window S (0 or more), and -max-fills, -freeze not negative, -max-notional a decimal")
			}
			settings.MaxNotionalUSD = d
			return nil
		}
		return usagef("protection: unknown subcommand %q (show, set, reset)", sub)
	})
	if err != nil {
		return err
	}
	defer cancel()
	switch sub {
	case "show":
		call = func(c *client.Client) (*client.Protection, error) { return c.Protection(ctx) }
	case "set":
		call = func(c *client.Client) (*client.Protection, error) { return c.SetProtection(ctx, settings) }
	default:
		call = func(c *client.Client) (*client.Protection, error) { return c.ResetProtection(ctx) }
	}
	p, err := call(c)
	if err != nil {
		return err
	}
	return e.emit(p, func(w *tabwriter.Writer) {
		row(w, "window", fmt.Sprintf("%d s", p.WindowSeconds))
		row(w, "max fills", p.MaxFills)
		row(w, "max notional (USD)", p.MaxNotionalUSD)
		row(w, "freeze", fmt.Sprintf("%d s", p.FreezeSeconds))
		frozen := "no"
		switch {
		case p.Frozen && p.FrozenUntil != nil:
			frozen = "until " + p.FrozenUntil.Format(time.RFC3339)
		case p.Frozen:
			frozen = "until reset"
		}
		row(w, "frozen", frozen)
		row(w, "fills in window", p.FillsInWindow)
		row(w, "notional in window (USD)", p.NotionalInWindowUSD)
	})
}
