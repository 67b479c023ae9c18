package ledgersim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
)

// internalKey derives the desk-held Ed25519 key of an internal party from the seed and
// its hint.
func internalKey(seed uint64, hint string) ed25519.PrivateKey {
	h := sha256.New()
	h.Write([]byte("ledgersim/internal-party-key/v1"))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(hint))
	return ed25519.NewKeyFromSeed(h.Sum(nil))
}

// allocateInternal creates an internal party (no checks, no input); it returns its id.
func (st *state) allocateInternal(hint string) string {
	if id, ok := st.internalByHint[hint]; ok {
		return id
	}
	pub := internalKey(st.cfg.Seed, hint).Public().(ed25519.PublicKey)
	p := &Party{ID: PartyID(hint, pub), Hint: hint, PublicKey: pub}
	st.addParty(p)
	st.internalByHint[hint] = p.ID
	return p.ID
}

func (st *state) addParty(p *Party) {
	st.parties[p.ID] = p
	st.scratch.intern(p.ID)
	st.acc.add(partySum(&st.scratch, p))
}

func (st *state) isReservoir(id string) bool { return id != "" && id == st.reservoir }

// OnboardExternal starts the onboarding of an external party holding the Ed25519 key
// pub: it returns the party id and the topology transactions whose hashes the party
// signs (CompleteOnboarding). Nothing is allocated yet. The answer is deterministic for
// the same inputs, and a repeated call while pending returns the same onboarding.
func (l *Ledger) OnboardExternal(hint string, pub ed25519.PublicKey) (Onboarding, error) {
	return faulted(l, CallInfo{Op: "onboard", PartyID: hint},
		func() (Onboarding, error) { return l.onboard(hint, pub) })
}

func (l *Ledger) onboard(hint string, pub ed25519.PublicKey) (Onboarding, error) {
	if !validHint(hint) {
		return Onboarding{}, newErr(CategoryInvalid, "", "bad party hint %q (1..%d letters, digits, '-', '_', '.')", truncate(hint), maxHintLen)
	}
	if len(pub) != ed25519.PublicKeySize {
		return Onboarding{}, newErr(CategoryInvalid, "", "public key must be %d bytes, got %d", ed25519.PublicKeySize, len(pub))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputOnboard, At: l.stamp(), Hint: hint, PublicKey: append([]byte(nil), pub...)}
	return l.applyOnboard(in, false)
}

func (l *Ledger) applyOnboard(in *Input, replay bool) (Onboarding, error) {
	st := l.st
	changed := l.advance(in.At)
	id := PartyID(in.Hint, in.PublicKey)
	if _, ok := st.parties[id]; ok {
		l.tick(in.At, changed, replay)
		return Onboarding{}, newErr(CategoryAlreadyExists, "", "party %s is already allocated", id)
	}
	if p, ok := st.pending[id]; ok {
		l.tick(in.At, changed, replay)
		return cloneOnboarding(p.ob), nil
	}
	if len(st.pending) >= st.cfg.Limits.MaxPendingOnboardings {
		l.tick(in.At, changed, replay)
		return Onboarding{}, newErr(CategoryUnavailable, "", "too many pending onboardings (%d)", len(st.pending))
	}
	p := &pendingOnboarding{hint: in.Hint, pub: ed25519.PublicKey(append([]byte(nil), in.PublicKey...)), expires: in.At.Add(st.cfg.OnboardingLifetime)}
	p.ob = Onboarding{PartyID: id, Topology: OnboardingTopology(st.cfg.LedgerID, in.Hint, p.pub), ExpiresAt: p.expires}
	p.sum = pendingSum(&st.scratch, p)
	st.pending[id] = p
	st.acc.add(p.sum)
	st.pendingExp.push(expiry{at: p.expires, id: id})
	in.PartyID = id
	l.record(in, replay)
	return cloneOnboarding(p.ob), nil
}

func cloneOnboarding(o Onboarding) Onboarding {
	c := o
	c.Topology = make([]TopologyTx, len(o.Topology))
	for i, t := range o.Topology {
		c.Topology[i] = TopologyTx{Hash: append([]byte(nil), t.Hash...), Description: t.Description}
	}
	return c
}

// CompleteOnboarding allocates a pending external party given its signatures over every
// topology hash, in order. A wrong count or a signature that does not verify is
// ErrBadSignature; an expired onboarding ErrExpired; an unknown one ErrNotFound.
// Completing an already allocated party succeeds again (so a lost answer can be retried).
func (l *Ledger) CompleteOnboarding(partyID string, signatures [][]byte) error {
	_, err := faulted(l, CallInfo{Op: "complete-onboarding", PartyID: partyID},
		func() (struct{}, error) { return struct{}{}, l.complete(partyID, signatures) })
	return err
}

func (l *Ledger) complete(partyID string, signatures [][]byte) error {
	l.mu.Lock()
	now := l.stamp()
	if p, ok := l.st.parties[partyID]; ok && p.External {
		l.mu.Unlock()
		return nil
	}
	p := l.st.pending[partyID]
	if p == nil {
		l.mu.Unlock()
		return newErr(CategoryNotFound, "", "no pending onboarding of %q", truncate(partyID))
	}
	if !now.Before(p.expires) {
		l.mu.Unlock()
		return newErr(CategoryExpired, "", "onboarding of %s expired", partyID)
	}
	pub, topo := p.pub, p.ob.Topology
	l.mu.Unlock()

	if len(signatures) != len(topo) {
		return newErr(CategoryBadSignature, "", "want %d signatures, one per topology transaction, got %d", len(topo), len(signatures))
	}
	for i, t := range topo {
		if len(signatures[i]) != ed25519.SignatureSize || !ed25519.Verify(pub, t.Hash, signatures[i]) {
			return newErr(CategoryBadSignature, "", "signature %d does not verify over topology hash %d", i, i)
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	sigs := make([][]byte, len(signatures))
	for i, s := range signatures {
		sigs[i] = append([]byte(nil), s...)
	}
	in := &Input{Kind: InputCompleteOnboarding, At: l.stamp(), PartyID: partyID, Signatures: sigs}
	return l.applyComplete(in, false)
}

func (l *Ledger) applyComplete(in *Input, replay bool) error {
	st := l.st
	changed := l.advance(in.At)
	if p, ok := st.parties[in.PartyID]; ok && p.External {
		l.tick(in.At, changed, replay)
		return nil
	}
	p := st.pending[in.PartyID]
	if p == nil {
		l.tick(in.At, changed, replay)
		return newErr(CategoryExpired, "", "onboarding of %s expired", in.PartyID)
	}
	delete(st.pending, in.PartyID)
	st.acc.sub(p.sum)
	st.addParty(&Party{ID: in.PartyID, Hint: p.hint, PublicKey: p.pub, External: true})
	l.record(in, replay)
	return nil
}

// AllocateInternal allocates (or finds) the internal, desk-signed party of hint. Its
// identity is deterministic: its id carries the fingerprint (Fingerprint) of a key derived
// from the seed and the hint, so the same Config always yields the same party id.
func (l *Ledger) AllocateInternal(hint string) (string, error) {
	return faulted(l, CallInfo{Op: "allocate-internal", PartyID: hint},
		func() (string, error) { return l.allocateInternal(hint) })
}

func (l *Ledger) allocateInternal(hint string) (string, error) {
	if !validHint(hint) {
		return "", newErr(CategoryInvalid, "", "bad party hint %q", truncate(hint))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &Input{Kind: InputAllocateInternal, At: l.stamp(), Hint: hint}
	return l.applyAllocateInternal(in, false)
}

func (l *Ledger) applyAllocateInternal(in *Input, replay bool) (string, error) {
	st := l.st
	changed := l.advance(in.At)
	if id, ok := st.internalByHint[in.Hint]; ok {
		l.tick(in.At, changed, replay)
		return id, nil
	}
	id := st.allocateInternal(in.Hint)
	in.PartyID = id
	l.record(in, replay)
	return id, nil
}

// Party returns an allocated party.
func (l *Ledger) Party(id string) (Party, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	p, ok := l.st.parties[id]
	if !ok {
		return Party{}, newErr(CategoryNotFound, "party", "unknown party %q", truncate(id))
	}
	c := *p
	c.PublicKey = append(ed25519.PublicKey(nil), p.PublicKey...)
	return c, nil
}

// InternalParty returns the id of the internal party of hint, if allocated.
func (l *Ledger) InternalParty(hint string) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	id, ok := l.st.internalByHint[hint]
	return id, ok
}

// truncate bounds caller-supplied text inside error messages.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
