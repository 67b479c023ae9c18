package ledgersim

import (
	"crypto/ed25519"
	"errors"
)

// Submissions in flight.
//
// On Canton a submission is sequenced, then confirmed, then committed: between its
// sequencing and its commit it is in flight. Its input contracts are locked meanwhile, and
// a concurrent transaction naming one of them is rejected LOCKED_CONTRACTS (contention: a
// retry may succeed once the first commits or fails); its change id (act-as parties and
// command id) is in flight, and a concurrent submission of the same change id is refused
// SUBMISSION_ALREADY_IN_FLIGHT, whose outcome the submitter learns from the completion
// stream. Nothing about a transaction in flight is durable: a participant that crashes
// loses it (it never commits here), so it leaves no trace in the ledger's journal.
//
// ledgersim keeps an execute in flight for Config.SequencingDelay: BeginExecute checks it
// and locks, Flight.Commit commits it (the synchronous Execute does both, reporting the
// delay to Config.Sleep between them). A Submit (the desk's own participant signing for
// an internal party) commits at once, but is refused contention when it names an input an
// execute in flight locked.

// changeKey is the deduplication key of a command: the acting party and its command id.
type changeKey struct{ actAs, commandID string }

// Flight is an execute in flight: sequenced, its inputs locked, not committed yet.
type Flight struct {
	l          *Ledger
	key        changeKey
	preparedID string
	inputs     []string
	signature  []byte
	fault      Fault
	done       bool
}

// PreparedID names the prepared transaction the flight executes.
func (f *Flight) PreparedID() string { return f.preparedID }

// flights are the executes in flight and the inputs they lock (guarded by Ledger.mu; not
// state: never journaled, snapshotted or digested).
type flights struct {
	byKey  map[changeKey]*Flight
	locked map[string]*Flight // input contract id → the flight locking it
}

func (fs *flights) add(f *Flight) {
	if fs.byKey == nil {
		fs.byKey, fs.locked = map[changeKey]*Flight{}, map[string]*Flight{}
	}
	fs.byKey[f.key] = f
	for _, cid := range f.inputs {
		fs.locked[cid] = f
	}
}

func (fs *flights) remove(f *Flight) {
	if fs.byKey[f.key] == f {
		delete(fs.byKey, f.key)
	}
	for _, cid := range f.inputs {
		if fs.locked[cid] == f {
			delete(fs.locked, cid)
		}
	}
}

// lockedInput returns the first of cids an execute in flight locks.
func (fs *flights) lockedInput(cids []string) (string, bool) {
	for _, cid := range cids {
		if _, ok := fs.locked[cid]; ok {
			return cid, true
		}
	}
	return "", false
}

// InFlight reports how many executes are in flight.
func (l *Ledger) InFlight() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.flying.byKey)
}

// BeginExecute is the first half of Execute: the blob, the signature and the prepared
// transaction are checked as Execute checks them; then, unless its command took effect
// (ErrDuplicate), is in flight already (ErrAlreadyInFlight), an input was archived
// (ErrInactive) or is locked by another execute in flight (ErrContention), the execute is
// in flight until Commit or Abandon. The fault plan is consulted here: a rejection answers
// at once, a lost answer is Commit's.
func (l *Ledger) BeginExecute(blob []byte, signature []byte) (*Flight, error) {
	c := CallInfo{Op: "execute", PreparedID: preparedIDOf(blob)}
	fault := l.decide(c)
	if fault.Reject != CategoryNone {
		return nil, newErr(fault.Reject, c.Op, "injected fault")
	}
	f, err := l.beginExecute(blob, signature)
	if err != nil {
		return nil, withOp(err, c.Op)
	}
	f.fault = fault
	return f, nil
}

// beginExecute checks an execute and puts it in flight.
func (l *Ledger) beginExecute(blob []byte, signature []byte) (*Flight, error) {
	// Outside the lock: the blob's layout and authentication.
	ob, err := l.open(blob)
	if err != nil {
		return nil, err
	}
	preparedID := ob.id
	// Under the lock: find the transaction and what to verify.
	l.mu.Lock()
	now := l.stamp()
	r := l.st.prepared[preparedID]
	if r == nil {
		_, err := l.lookupGone(preparedID)
		l.mu.Unlock()
		return nil, err
	}
	if r.p.Hash != ob.hash {
		l.mu.Unlock()
		return nil, newErr(CategoryInvalid, "", "prepared transaction %s: the blob's hash is not the one prepared", preparedID)
	}
	if u, done := l.st.doneUpdate(r.p.ActAs, r.p.CommandID); done {
		l.mu.Unlock()
		return nil, duplicate(u)
	}
	if !now.Before(r.p.ExpiresAt) {
		l.mu.Unlock()
		return nil, newErr(CategoryExpired, "", "prepared transaction %s expired", preparedID)
	}
	pub := l.st.parties[r.p.ActAs].PublicKey
	hash := r.p.Hash
	l.mu.Unlock()

	// Outside the lock: the signature.
	if len(signature) != ed25519.SignatureSize || !ed25519.Verify(pub, hash[:], signature) {
		return nil, newErr(CategoryBadSignature, "", "signature does not verify with the key of %s", r.p.ActAs)
	}

	// Under the lock: sequence it, unless it conflicts with the ledger or a flight.
	l.mu.Lock()
	defer l.mu.Unlock()
	now = l.stamp()
	changed := l.advance(now)
	fail := func(err error) (*Flight, error) {
		l.tick(now, changed, false)
		return nil, err
	}
	if r = l.st.prepared[preparedID]; r == nil {
		_, err := l.lookupGone(preparedID)
		return fail(err)
	}
	key := changeKey{r.p.ActAs, r.p.CommandID}
	if u, done := l.st.doneUpdate(key.actAs, key.commandID); done {
		return fail(duplicate(u))
	}
	if other, ok := l.flying.byKey[key]; ok {
		return fail(newErr(CategoryAlreadyInFlight, "", "command %q of %s is in flight as %s: its outcome comes through the completion stream",
			key.commandID, truncate(key.actAs), other.preparedID))
	}
	if !now.Before(r.p.ExpiresAt) {
		return fail(newErr(CategoryExpired, "", "prepared transaction %s expired", preparedID))
	}
	for _, cid := range r.p.Inputs {
		if _, ok := l.st.contracts[cid]; !ok {
			return fail(newErr(CategoryInactive, "", "input contract %s was archived since prepare", cid))
		}
	}
	if cid, ok := l.flying.lockedInput(r.p.Inputs); ok {
		return fail(newErr(CategoryContention, "", "input contract %s is locked by a transaction in flight", cid))
	}
	l.tick(now, changed, false)
	f := &Flight{l: l, key: key, preparedID: preparedID, inputs: append([]string(nil), r.p.Inputs...)}
	if l.cfg.Recorder != nil { // the signature is recorded for audit at commit
		f.signature = append([]byte(nil), signature...)
	}
	l.flying.add(f)
	return f, nil
}

// errFlightDone refuses a second Commit or a Commit after Abandon.
var errFlightDone = errors.New("ledgersim: the flight was committed or abandoned already")

// Commit commits the execute in flight at the ledger's time now, releasing its locks: it
// is checked again (its deadlines against the record time of now) and commits atomically,
// or fails with nothing done.
func (f *Flight) Commit() (Update, error) {
	u, err := f.commit()
	f.l.sleep(f.fault.Delay)
	if err != nil {
		return Update{}, withOp(err, "execute")
	}
	if f.fault.LoseAnswer {
		return Update{}, newErr(CategoryUnknownOutcome, "execute", "answer lost (injected fault)")
	}
	return u, nil
}

// commit commits the flight under the lock, without the fault plan's effects.
func (f *Flight) commit() (Update, error) {
	l := f.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if f.done {
		return Update{}, &Error{Category: CategoryInternal, Op: "execute", Err: errFlightDone}
	}
	f.done = true
	l.flying.remove(f)
	in := &Input{Kind: InputExecute, At: l.stamp(), PreparedID: f.preparedID, Signature: f.signature}
	return l.applyExecute(in, false)
}

// Abandon ends the flight without committing it (the process that held it is gone), and
// releases its locks. A flight committed already is left as it is.
func (f *Flight) Abandon() {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	if !f.done {
		f.done = true
		f.l.flying.remove(f)
	}
}
