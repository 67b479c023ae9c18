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
		var als []AllocationRef
		switch h.Kind {
		case contQuotePrepare:
			if q := d.Quotes[h.Entity]; q != nil && q.State == QuoteFunding {
				als = q.Allocations
			}
		case contTradePrepare:
			if t := d.Trades[h.Entity]; t != nil && t.State == TradeAllocating {
				als = t.Allocations
			}
		}
		for _, al := range als {
			if al.PreparedID != "" && len(al.Inputs) > 0 && repeats(al.Inputs) {
				return true
			}
		}
	}
	return false
}
