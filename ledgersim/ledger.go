package ledgersim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/money"
)

// Ledger is the embedded ledger simulator. All methods are safe for concurrent use: one
// mutex guards the state, and Ed25519 verification runs outside it so executes verify
// in parallel.
type Ledger struct {
	cfg   Config
	mu    sync.RWMutex
	sumMu sync.Mutex // serializes flushSums among holders of the read lock
	st    *state
	calls atomic.Uint64
	// now is the latest time any call stamped (never digested): ledger time never goes
	// backwards even if the clock does.
	now time.Time
	// blob serializes and authenticates the prepared transactions (blob.go); blobBuf is
	// serialize's scratch, under mu.
	blob    *blobKit
	blobBuf blobScratch
	// flying are the executes in flight (inflight.go), under mu.
	flying flights
}

// New builds a ledger at genesis from cfg: the catalog, the internal parties (and the
// registry admin parties the catalog names) and their funding, where supply is created
// (besides ListInstrument's reservoir funding of an instrument listed later).
func New(cfg Config) (*Ledger, error) {
	c, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	l := &Ledger{cfg: c}
	l.blob = newBlobKit(&l.cfg)
	st := newState(&l.cfg)
	l.st = st
	for _, p := range c.Parties {
		st.allocateInternal(p.Hint)
	}
	for _, s := range c.Instruments {
		if _, ok := st.internalByHint[s.Admin]; !ok {
			st.allocateInternal(s.Admin)
		}
	}
	for _, s := range c.Instruments {
		in := &Instrument{ID: s.ID, Admin: st.internalByHint[s.Admin], Symbol: s.Symbol, DisplaySymbol: s.DisplaySymbol,
			Decimals: s.Decimals, Native: s.Native, Listed: true}
		st.catalog(in)
		st.supply[s.ID] = money.Zero
	}
	genesis := &tx{st: st, u: &Update{}}
	for _, p := range c.Parties {
		id := st.internalByHint[p.Hint]
		for _, f := range p.Funding {
			genesis.createHolding("", id, st.instruments[f.Instrument], f.Amount)
			st.supply[f.Instrument] = st.supply[f.Instrument].Add(f.Amount)
		}
		if p.Preapproval && c.Profile.PreapprovalRequired() {
			cid := st.newCID()
			genesis.add(&contract{kind: ContractPreapproval, pa: &Preapproval{CID: cid, Receiver: id, Provider: id}}, cid)
		}
	}
	if c.Faucet.Reservoir != "" {
		st.reservoir = st.internalByHint[c.Faucet.Reservoir]
	}
	return l, nil
}

// flushSums completes the digest accumulator (state.flushSums) under the read or the
// write lock: pending contributions exist only after a write, so once one reader has
// flushed, the others find nothing to do and the accumulator is read unchanged.
func (l *Ledger) flushSums() {
	l.sumMu.Lock()
	l.st.flushSums()
	l.sumMu.Unlock()
}

// Config returns the normalized configuration (defaults filled in).
func (l *Ledger) Config() Config { return l.cfg }

// stamp returns the time of a call, under the lock: the clock's reading, never earlier
// than a previous call's.
func (l *Ledger) stamp() time.Time {
	t := l.cfg.Clock.Now().Round(0).UTC()
	if t.Before(l.now) {
		return l.now
	}
	l.now = t
	return t
}

// record hands an input to the Recorder (live calls only, never during Replay).
func (l *Ledger) record(in *Input, replay bool) {
	if !replay && l.cfg.Recorder != nil {
		l.cfg.Recorder(*in)
	}
}

// advance applies the passage of time; when that changed the state on a call that then
// fails, the caller records a tick so that replay repeats it.
func (l *Ledger) advance(now time.Time) bool {
	before := l.st.acc
	l.st.advance(now)
	return before != l.st.acc
}

// tick records a time-only input when advance changed the state but the call made no
// other change.
func (l *Ledger) tick(now time.Time, changed, replay bool) {
	if changed {
		l.record(&Input{Kind: InputTick, At: now}, replay)
	}
}

// commandCall describes a call carrying cmd (nil: of no kind) to the fault plan.
func commandCall(op, actAs string, cmd Command, commandID string) CallInfo {
	var kind CommandKind
	if cmd != nil {
		kind = cmd.Kind()
	}
	return CallInfo{Op: op, ActAs: actAs, CommandID: commandID, Kind: kind}
}

// ---- Prepare ----

// Prepare interprets cmd for the external party actAs against the current state, chooses
// its input holdings and fixes the hash the party signs. It fails now with a clear
// category (insufficient funds, unknown contract, wrong party, ...). A command id that
// already took effect gives ErrAlreadyExecuted carrying the update id.
func (l *Ledger) Prepare(actAs string, cmd Command, commandID string) (Prepared, error) {
	return faulted(l, commandCall("prepare", actAs, cmd, commandID),
		func() (Prepared, error) { return l.prepare(actAs, cmd, commandID) })
}

func (l *Ledger) prepare(actAs string, cmd Command, commandID string) (Prepared, error) {
	cmd, err := normalizeCommand(cmd)
	if err != nil {
		return Prepared{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputPrepare, At: l.stamp(), ActAs: actAs, CommandID: commandID}
	if l.cfg.Recorder != nil { // the command's envelope is for the journal only
		in.Command = Envelope(cmd)
	}
	return l.applyPrepare(in, cmd, false)
}

func (l *Ledger) applyPrepare(in *Input, cmd Command, replay bool) (Prepared, error) {
	now := in.At
	changed := l.advance(now)
	r, err := l.checkPrepare(in, cmd)
	if err != nil {
		l.tick(now, changed, replay)
		return Prepared{}, err
	}
	p := &r.p
	if replay && (in.PreparedID != p.ID || string(in.Hash) != string(p.Hash[:])) {
		return Prepared{}, newErr(CategoryInternal, "replay", "prepare diverged: recorded %s, got %s", in.PreparedID, p.ID)
	}
	in.PreparedID, in.Hash = p.ID, p.Hash[:]
	l.record(in, replay)
	out := p.clone()
	if !replay { // a replay's answer goes nowhere
		out.Blob = l.serialize(p)
	}
	return out, nil
}

// checkPrepare validates and, on success only, stores the prepared transaction.
func (l *Ledger) checkPrepare(in *Input, cmd Command) (*preparedRec, error) {
	st := l.st
	party, ok := st.parties[in.ActAs]
	if !ok {
		return nil, newErr(CategoryNotFound, "", "unknown party %q", in.ActAs)
	}
	if !party.External {
		return nil, newErr(CategoryInvalid, "", "%s is signed for by the desk: use Submit", in.ActAs)
	}
	if !validID(in.CommandID) {
		return nil, newErr(CategoryInvalid, "", "command id must be 1..%d bytes", maxIDLen)
	}
	if u, done := st.doneUpdate(in.ActAs, in.CommandID); done {
		return nil, &Error{Category: CategoryAlreadyExecuted, Msg: fmt.Sprintf("command %q took effect in update %s", in.CommandID, u.UpdateID), UpdateID: u.UpdateID}
	}
	if len(st.prepared) >= st.cfg.Limits.MaxPrepared {
		return nil, newErr(CategoryUnavailable, "", "too many live prepared transactions (%d)", len(st.prepared))
	}
	ck := checker{st: st, actAs: in.ActAs, now: in.At}
	pl, err := ck.check(cmd)
	if err != nil {
		return nil, err
	}
	r := &preparedRec{selected: pl.chosen()}
	r.p = Prepared{ID: st.newPreparedID(), ActAs: in.ActAs, Command: cmd, CommandID: in.CommandID,
		PreparedAt: in.At, ExpiresAt: in.At.Add(st.cfg.PreparedLifetime), Inputs: pl.inputs()}
	r.p.Hash = hashPreparedTo(&st.scratch.e, st.cfg.LedgerID, &r.p)
	r.sum = preparedSum(&r.p)
	st.prepared[r.p.ID] = r
	st.acc.add(r.sum)
	st.prepExp.push(expiry{at: r.p.ExpiresAt, id: r.p.ID})
	return r, nil
}

// ---- Execute ----

// Execute runs a prepared transaction, handed back as the blob Prepare serialized
// (Prepared.Blob), with the acting party's Ed25519 signature over its hash. A blob that
// is malformed, altered or not this ledger's → ErrInvalid; expired → ErrExpired, bad
// signature → ErrBadSignature, an input spent since prepare → ErrInactive; otherwise it
// commits atomically. A command id of the party that already took effect (this prepared
// transaction's or another's) → ErrDuplicate.
func (l *Ledger) Execute(blob []byte, signature []byte) (Update, error) {
	return faulted(l, CallInfo{Op: "execute", PreparedID: preparedIDOf(blob)},
		func() (Update, error) { return l.execute(blob, signature) })
}

func (l *Ledger) execute(blob []byte, signature []byte) (Update, error) {
	f, err := l.beginExecute(blob, signature) // inflight.go
	if err != nil {
		return Update{}, err
	}
	l.sleep(l.cfg.SequencingDelay)
	return f.commit()
}

// lookupGone answers for a prepared id that is not live: executed (a duplicate of its
// command), expired or unknown.
func (l *Ledger) lookupGone(preparedID string) (Update, error) {
	if seq, ok := l.st.updates.byPreparedID(preparedID); ok {
		u := l.st.updates.update(seq)
		return Update{}, duplicate(&u)
	}
	if _, ok := l.st.tomb[preparedID]; ok {
		return Update{}, newErr(CategoryExpired, "", "prepared transaction %s expired", preparedID)
	}
	return Update{}, newErr(CategoryNotFound, "", "unknown prepared transaction %q", preparedID)
}

func (l *Ledger) applyExecute(in *Input, replay bool) (Update, error) {
	st := l.st
	now := in.At
	changed := l.advance(now)
	fail := func(err error) (Update, error) {
		l.tick(now, changed, replay)
		return Update{}, err
	}
	r := st.prepared[in.PreparedID]
	if r == nil {
		_, err := l.lookupGone(in.PreparedID)
		return fail(err)
	}
	if u, done := st.doneUpdate(r.p.ActAs, r.p.CommandID); done {
		return fail(duplicate(u))
	}
	if !now.Before(r.p.ExpiresAt) {
		return fail(newErr(CategoryExpired, "", "prepared transaction %s expired", in.PreparedID))
	}
	for _, cid := range r.p.Inputs {
		if _, ok := st.contracts[cid]; !ok {
			return fail(newErr(CategoryInactive, "", "input contract %s was archived since prepare", cid))
		}
	}
	ck := checker{st: st, actAs: r.p.ActAs, now: now, fixed: true, selected: r.selected}
	pl, err := ck.check(r.p.Command)
	if err != nil {
		return fail(err)
	}
	st.dropPrepared(r)
	u := l.commit(now, r.p.ActAs, r.p.CommandID, r.p.ID, r.p.Command.Kind(), pl)
	if replay && in.UpdateID != u.UpdateID {
		return Update{}, newErr(CategoryInternal, "replay", "execute diverged: recorded update %s, got %s", in.UpdateID, u.UpdateID)
	}
	in.UpdateID = u.UpdateID
	l.record(in, replay)
	return u, nil
}

// commit applies a checked plan as one update with the next offset and update id.
func (l *Ledger) commit(now time.Time, actAs, commandID, preparedID string, kind CommandKind, pl plan) Update {
	st := l.st
	st.offset++
	// The update is built in a scratch Update whose lists keep their arrays from one
	// commit to the next; the retained copy and the caller's get one array each.
	u := &st.ubuf
	*u = Update{Offset: st.offset, CommandID: commandID, PreparedID: preparedID, ActAs: actAs, Kind: kind, RecordTime: now,
		Created: u.Created[:0], Archived: u.Archived[:0], Receipts: u.Receipts[:0], Released: u.Released[:0]}
	t := &st.plans.tx // reused, as the plans are (plans.go)
	*t = tx{st: st, u: u, off: st.offset}
	pl.commit(t)
	u.UpdateID = st.newUpdateID()
	st.retain(u)
	return u.clone()
}

// ---- Submit ----

// Submit executes cmd at once for an internal (desk-signed) party; external parties are
// refused with ErrForbidden (they Prepare and Execute). A command id of the party that
// already took effect → ErrDuplicate, and nothing more happens.
func (l *Ledger) Submit(actAs string, cmd Command, commandID string) (Update, error) {
	return faulted(l, commandCall("submit", actAs, cmd, commandID),
		func() (Update, error) { return l.submit(actAs, cmd, commandID) })
}

func (l *Ledger) submit(actAs string, cmd Command, commandID string) (Update, error) {
	cmd, err := normalizeCommand(cmd)
	if err != nil {
		return Update{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputSubmit, At: l.stamp(), ActAs: actAs, CommandID: commandID}
	if l.cfg.Recorder != nil {
		// cmd is the ledger's own copy (normalizeCommand) and nothing keeps it after
		// the commit, before the Recorder sees the input: the envelope may share it.
		in.Command = envelope(cmd, false)
	}
	return l.applySubmit(in, cmd, false)
}

func (l *Ledger) applySubmit(in *Input, cmd Command, replay bool) (Update, error) {
	st := l.st
	now := in.At
	changed := l.advance(now)
	fail := func(err error) (Update, error) {
		l.tick(now, changed, replay)
		return Update{}, err
	}
	party, ok := st.parties[in.ActAs]
	if !ok {
		return fail(newErr(CategoryNotFound, "", "unknown party %q", in.ActAs))
	}
	if party.External {
		return fail(newErr(CategoryForbidden, "", "%s signs its own transactions: use Prepare and Execute", in.ActAs))
	}
	if !validID(in.CommandID) {
		return fail(newErr(CategoryInvalid, "", "command id must be 1..%d bytes", maxIDLen))
	}
	if u, done := st.doneUpdate(in.ActAs, in.CommandID); done {
		return fail(duplicate(u))
	}
	ck := checker{st: st, actAs: in.ActAs, now: now}
	pl, err := ck.check(cmd)
	if err != nil {
		return fail(err)
	}
	if cid, ok := l.flying.lockedInput(pl.inputs()); ok { // never on replay: nothing flies
		return fail(newErr(CategoryContention, "", "input contract %s is locked by a transaction in flight", cid))
	}
	u := l.commit(now, in.ActAs, in.CommandID, "", cmd.Kind(), pl)
	if replay && in.UpdateID != u.UpdateID {
		return Update{}, newErr(CategoryInternal, "replay", "submit diverged: recorded update %s, got %s", in.UpdateID, u.UpdateID)
	}
	in.UpdateID = u.UpdateID
	l.record(in, replay)
	return u, nil
}

// ---- Delist ----

// Delist removes an instrument from the catalog. Its holdings remain, and queries then
// show their raw registry id as symbol; transfers, allocations and settlements of it
// keep working (the registry still exists). Delisting twice is a no-op.
func (l *Ledger) Delist(instrumentID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputDelist, At: l.stamp(), Instrument: instrumentID}
	return withOp(l.applyDelist(in, false), "delist")
}

func (l *Ledger) applyDelist(in *Input, replay bool) error {
	st := l.st
	changed := l.advance(in.At)
	inst := st.instruments[in.Instrument]
	if inst == nil || !inst.Listed {
		l.tick(in.At, changed, replay)
		if inst == nil {
			return newErr(CategoryNotFound, "", "unknown instrument %q", in.Instrument)
		}
		return nil
	}
	st.acc.sub(instrumentSum(&st.scratch, inst))
	inst.Listed = false
	st.acc.add(instrumentSum(&st.scratch, inst))
	l.record(in, replay)
	return nil
}
