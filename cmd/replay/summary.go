package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/deskco/rfqdesk/ledgeradapter"
	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// deskCounts are the summary counts of a desk state.
type deskCounts struct {
	Parties, Registered, House int

	RegistrationsPending int

	RFQsOpen, RFQsFilled, RFQsCancelled, RFQsExpired int

	// Quotes pending are funding (allocations not landed), live (anchored) or settling.
	QuotesFunding, QuotesLive, QuotesSettling, QuotesClosed int

	TradesSettled, TradesFailed, TradesInFlight int

	// Actions pending wait for a signature; executing ones are with the ledger.
	ActionsPending, ActionsExecuting int

	HeldReplies, LedgerCallsInFlight, Sockets, Deadlines int
}

func countDesk(d *machine.Desk) deskCounts {
	var c deskCounts
	for _, p := range d.Parties {
		c.Parties++
		if p.House != "" {
			c.House++
		} else {
			c.Registered++
		}
	}
	for _, r := range d.Registrations {
		switch r.State {
		case machine.RegOnboarding, machine.RegAwaiting, machine.RegCompleting:
			c.RegistrationsPending++
		}
	}
	for _, r := range d.RFQs {
		switch r.State {
		case machine.RFQOpen:
			c.RFQsOpen++
		case machine.RFQFilled:
			c.RFQsFilled++
		case machine.RFQCancelled:
			c.RFQsCancelled++
		case machine.RFQExpired:
			c.RFQsExpired++
		}
	}
	for _, q := range d.Quotes {
		switch q.State {
		case machine.QuoteFunding:
			c.QuotesFunding++
		case machine.QuoteLive:
			c.QuotesLive++
		case machine.QuoteSettling:
			c.QuotesSettling++
		default:
			c.QuotesClosed++
		}
	}
	for _, t := range d.Trades {
		switch t.State {
		case machine.TradeSettled:
			c.TradesSettled++
		case machine.TradeFailed:
			c.TradesFailed++
		default:
			c.TradesInFlight++
		}
	}
	for _, a := range d.Actions {
		switch a.State {
		case machine.ActionPending:
			c.ActionsPending++
		case machine.ActionExecuting:
			c.ActionsExecuting++
		}
	}
	c.HeldReplies, c.LedgerCallsInFlight = len(d.Held), len(d.Pending)
	c.Sockets, c.Deadlines = len(d.Sockets), len(d.Deadlines.Items)
	return c
}

// ledgerCounts are the summary counts of the ledger, over the parties the desk knows
// (its registered and house parties, registrations' parties, and its own internal parties):
// ledgersim has no query listing every party.
type ledgerCounts struct {
	Parties, Holdings, Allocations, PendingTransfers int
}

func countLedger(l *ledgersim.Ledger, d *machine.Desk) ledgerCounts {
	ids := map[string]bool{}
	for id := range d.Parties {
		ids[id] = true
	}
	for _, r := range d.Registrations {
		if r.PartyID != "" {
			ids[r.PartyID] = true
		}
	}
	for _, id := range []string{d.Cfg.Operator, d.Cfg.FeeParty, d.Cfg.Reservoir} {
		if id != "" {
			ids[id] = true
		}
	}
	if id, ok := l.InternalParty(ledgeradapter.RegistryHint); ok {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var c ledgerCounts
	for _, id := range sorted {
		if _, err := l.Party(id); err != nil {
			continue
		}
		c.Parties++
		c.Holdings += len(l.Holdings(id))
		c.Allocations += len(l.Allocations(id))
		c.PendingTransfers += len(l.PendingTransfers(id))
	}
	return c
}

// printSummary writes the counts, one aligned line per kind of entity.
func printSummary(w io.Writer, c deskCounts, lc *ledgerCounts) {
	fmt.Fprintf(w, "summary:\n")
	fmt.Fprintf(w, "  parties          %d (registered %d, house %d)\n", c.Parties, c.Registered, c.House)
	fmt.Fprintf(w, "  registrations    %d pending\n", c.RegistrationsPending)
	fmt.Fprintf(w, "  rfqs             %d open; closed and retained: %d filled, %d cancelled, %d expired\n",
		c.RFQsOpen, c.RFQsFilled, c.RFQsCancelled, c.RFQsExpired)
	fmt.Fprintf(w, "  quotes           %d live/pending (funding %d, live %d, settling %d); %d closed and retained\n",
		c.QuotesFunding+c.QuotesLive+c.QuotesSettling, c.QuotesFunding, c.QuotesLive, c.QuotesSettling, c.QuotesClosed)
	fmt.Fprintf(w, "  trades           %d settled, %d failed, %d in flight\n", c.TradesSettled, c.TradesFailed, c.TradesInFlight)
	fmt.Fprintf(w, "  actions          %d pending (%d awaiting a signature, %d executing)\n",
		c.ActionsPending+c.ActionsExecuting, c.ActionsPending, c.ActionsExecuting)
	fmt.Fprintf(w, "  held replies     %d\n", c.HeldReplies)
	fmt.Fprintf(w, "  ledger calls     %d in flight\n", c.LedgerCallsInFlight)
	fmt.Fprintf(w, "  sockets          %d\n", c.Sockets)
	fmt.Fprintf(w, "  deadlines        %d\n", c.Deadlines)
	if lc != nil {
		fmt.Fprintf(w, "  ledger           %d parties, %d holdings, %d live allocations, %d pending transfers (parties the desk knows)\n",
			lc.Parties, lc.Holdings, lc.Allocations, lc.PendingTransfers)
	}
}
