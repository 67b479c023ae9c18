package machine

// mayShareInputs reports whether some input holding is named more than once over the
// desk's live prepared transactions (the entries liveInputs lists, counted before it
// keys them by prepared id). When it is false no two of them share a holding, and
// CoinSelectionProblem skips building and sorting liveInputs: the simulator checks it
// after every step, and with hundreds of live actions that walk was 8% of a long run.
// When it is true CoinSelectionProblem walks them in order to name the first pair (or
// finds the repeat was within one prepared id, which it does not count).
func (d *Desk) mayShareInputs() bool {
	seen := make(map[string]struct{}, 2*len(d.Actions))
	repeats := func(inputs []string) bool {
		for _, cid := range inputs {
			if _, dup := seen[cid]; dup {
				return true
			}
			seen[cid] = struct{}{}
		}
		return false
	}
	for _, x := range d.Actions {
		if x != nil && len(x.Inputs) > 0 && repeats(x.Inputs) {
			return true
		}
	}
	for _, h := range d.Held {
		als := d.heldAllocations(h)
		for _, al := range als {
			if al.PreparedID != "" && len(al.Inputs) > 0 && repeats(al.Inputs) {
				return true
			}
		}
	}
	return false
}

// heldAllocations returns the allocations of a held quote submission or accept that still
// waits for the rest of its prepares (no action made yet); nothing for any other held
// request. It is
// CoinSelectionProblem's own reading of the held requests, kept apart from reservedOf's on
// purpose: the check must not share the code it checks.
func (d *Desk) heldAllocations(h *HeldReply) []AllocationRef {
	switch h.Kind {
	case contQuotePrepare:
		if q := d.Quotes[h.Entity]; q != nil && q.State == QuoteFunding {
			return q.Allocations
		}
	case contTradePrepare:
		if t := d.Trades[h.Entity]; t != nil && t.State == TradeAllocating {
			return t.Allocations
		}
	}
	return nil
}
