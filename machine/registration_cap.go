package machine

// DefaultMaxPendingRegistrations is the desk-wide cap on pending registrations
// (Config.MaxPendingRegistrations) of a new desk. A registration is pending from
// register/start until it completes or its lifetime (10 minutes) passes; at the cap,
// register/start answers 429 until one of them ends. A thousand is a hundred fresh
// registrations a minute for a whole lifetime, far above what makers onboarding need,
// while it bounds what abandoned ones hold: a few KB of desk state and journal each,
// and the ledger's pending onboarding.
const DefaultMaxPendingRegistrations = 1000

// pendingRegistrations counts the registrations that are still pending: waiting for the
// ledger's topology, for the party's signatures, or completing with the ledger. The walk
// over the map only counts, so its order decides nothing; the map holds at most the cap
// of pending registrations and those expired within the last lifetime.
func (d *Desk) pendingRegistrations() int {
	n := 0
	for _, r := range d.Registrations {
		switch r.State {
		case RegOnboarding, RegAwaiting, RegCompleting:
			n++
		}
	}
	return n
}

// registrationsFull reports whether register/start must be refused: the desk holds its
// cap of pending registrations. A cap of 0 (a desk journaled before the cap existed) is
// no cap, so that its journal replays as it ran.
func (d *Desk) registrationsFull() bool {
	limit := d.Cfg.MaxPendingRegistrations
	return limit > 0 && d.pendingRegistrations() >= limit
}

// errRegistrationsFull is register/start's refusal at the cap.
func errRegistrationsFull(limit int) *APIError {
	return apiErr(429, "", "the desk holds its limit of %d pending registrations; retry in a few minutes", limit)
}
