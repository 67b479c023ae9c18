package ledgersim

import (
	"github.com/deskco/rfqdesk/money"
)

// InputListInstrument lists an instrument in the registry's catalog after genesis and
// mints the faucet reservoir's funding of it in the same update (Ledger.ListInstrument).
const InputListInstrument InputKind = "list-instrument"

// KindListInstrument is the kind of the update that lists an instrument after genesis.
const KindListInstrument CommandKind = "list-instrument"

// Listing is what lists an instrument after genesis: its registry entry and the amount
// minted to the faucet reservoir (zero: none).
type Listing struct {
	Spec      InstrumentSpec `json:"spec"`
	Reservoir money.Decimal  `json:"reservoir"`
}

// ListInstrument adds an instrument to the token registry's catalog after genesis, as
// one update under commandID that also mints reservoir to the faucet reservoir party
// (the only supply created after genesis; zero mints nothing). The admin party
// (spec.Admin, default "registry") must be an internal party already. The command id
// deduplicates (with no acting party): re-issued while its update is retained, it returns
// that update and does nothing more, so that a desk lists its catalog again at every
// start; a listing is the operator's administration, not a Ledger API command. An instrument id already in the catalog is refused
// with ErrInvalid. The fault plan is not consulted (as for Delist).
func (l *Ledger) ListInstrument(spec InstrumentSpec, reservoir money.Decimal, commandID string) (Update, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputListInstrument, At: l.stamp(), CommandID: commandID,
		Listing: &Listing{Spec: spec, Reservoir: reservoir}}
	u, err := l.applyList(in, false)
	return u, withOp(err, "list-instrument")
}

func (l *Ledger) applyList(in *Input, replay bool) (Update, error) {
	st := l.st
	now := in.At
	changed := l.advance(now)
	fail := func(err error) (Update, error) {
		l.tick(now, changed, replay)
		return Update{}, err
	}
	if !validID(in.CommandID) {
		return fail(newErr(CategoryInvalid, "", "command id must be 1..%d bytes", maxIDLen))
	}
	if in.Listing == nil {
		return fail(newErr(CategoryInvalid, "", "no instrument to list"))
	}
	if u, done := st.doneUpdate("", in.CommandID); done {
		l.tick(now, changed, replay)
		return u.clone(), nil
	}
	pl, err := l.checkListing(in.Listing)
	if err != nil {
		return fail(err)
	}
	u := l.commit(now, "", in.CommandID, "", KindListInstrument, pl)
	if replay && in.UpdateID != u.UpdateID {
		return Update{}, newErr(CategoryInternal, "replay", "list-instrument diverged: recorded update %s, got %s", in.UpdateID, u.UpdateID)
	}
	in.UpdateID = u.UpdateID
	l.record(in, replay)
	return u, nil
}

// checkListing validates a listing against the state: the spec as Config.normalize
// checks a genesis instrument, an id not in the catalog, a known admin party, and a
// reservoir amount only where a reservoir exists.
func (l *Ledger) checkListing(li *Listing) (*listPlan, error) {
	st := l.st
	one := Config{Profile: l.cfg.Profile, Clock: l.cfg.Clock, Instruments: []InstrumentSpec{li.Spec}}
	c, err := one.normalize()
	if err != nil {
		return nil, newErr(CategoryInvalid, "", "%v", err)
	}
	s := c.Instruments[0]
	if _, ok := st.instruments[s.ID]; ok {
		return nil, newErr(CategoryInvalid, "", "instrument %q is already in the catalog", truncate(s.ID))
	}
	admin, ok := st.internalByHint[s.Admin]
	if !ok {
		return nil, newErr(CategoryNotFound, "", "instrument %q: no internal party %q to be its registry admin", truncate(s.ID), truncate(s.Admin))
	}
	amt := li.Reservoir
	switch {
	case amt.Sign() < 0 || fractionDigits(amt) > money.MaxFractionDigits:
		return nil, newErr(CategoryInvalid, "", "reservoir amount %s of %s must be non-negative with at most %d fractional digits", amt, truncate(s.ID), money.MaxFractionDigits)
	case amt.Sign() > 0 && st.reservoir == "":
		return nil, newErr(CategoryInvalid, "", "reservoir amount of %s given, but this ledger has no faucet reservoir", truncate(s.ID))
	}
	return &listPlan{in: &Instrument{ID: s.ID, Admin: admin, Symbol: s.Symbol, DisplaySymbol: s.DisplaySymbol,
		Decimals: s.Decimals, Native: s.Native, Listed: true}, spec: s, reservoir: amt}, nil
}

// listPlan lists one instrument and mints its reservoir funding.
type listPlan struct {
	in        *Instrument
	spec      InstrumentSpec // normalized: Admin is the admin's hint
	reservoir money.Decimal
}

func (p *listPlan) inputs() []string { return nil }
func (p *listPlan) chosen() []string { return nil }

func (p *listPlan) commit(t *tx) {
	st := t.st
	st.addInstrument(p.in, p.spec)
	st.supply[p.in.ID] = p.reservoir
	if p.reservoir.Sign() > 0 {
		t.createHolding("", st.reservoir, p.in, p.reservoir)
	}
}

// addInstrument puts an instrument at the end of the catalog, with its digest
// contribution; an instrument added after genesis keeps its normalized spec for the
// snapshot.
func (st *state) addInstrument(in *Instrument, spec InstrumentSpec) {
	st.catalog(in)
	st.added = append(st.added, spec)
}

// catalog puts an instrument at the end of the catalog, with its digest contribution.
func (st *state) catalog(in *Instrument) {
	st.instruments[in.ID] = in
	st.scratch.intern(in.ID)
	st.instrumentOrder = append(st.instrumentOrder, in.ID)
	st.acc.add(instrumentSum(&st.scratch, in))
}
