package machine

import (
	"crypto/ed25519"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Continuation kinds of the party flows.
const (
	contOnboard     ContKind = "onboard"
	contComplete    ContKind = "complete-onboarding"
	contPreapproval ContKind = "preapproval"
)

// partyByKey resolves the caller of a request from its API key hash.
func (d *Desk) partyByKey(keyHash string) (*Party, bool) {
	if keyHash == "" {
		return nil, false
	}
	id, ok := d.KeyIndex[keyHash]
	if !ok {
		return nil, false
	}
	p, ok := d.Parties[id]
	return p, ok
}

// partyByHint resolves a hint to a registered party.
func (d *Desk) partyByHint(hint string) (*Party, bool) {
	id, ok := d.HintIndex[hint]
	if !ok {
		return nil, false
	}
	p, ok := d.Parties[id]
	return p, ok
}

// hintOf returns the hint of a party id: the registered one for a party the desk knows,
// otherwise the part of the id before "::".
func (d *Desk) hintOf(partyID string) string {
	if p, ok := d.Parties[partyID]; ok {
		return p.Hint
	}
	// A party the desk does not know (the faucet's reservoir, another operator's party):
	// its hint is the part of the party id before "::".
	if hint, _, ok := strings.Cut(partyID, "::"); ok && hint != "" {
		return hint
	}
	return partyID
}

// addHouseParties registers the configured desk-signed parties.
func (d *Desk) addHouseParties() {
	for _, h := range d.Cfg.House {
		p := &Party{ID: h.PartyID, Hint: h.Hint, DisplayName: h.Hint, KeyHash: h.KeyHash, House: h.Role}
		d.Parties[p.ID] = p
		d.HintIndex[p.Hint] = p.ID
		d.KeyIndex[p.KeyHash] = p.ID
	}
}

// validDisplayName checks DECISIONS.md's rule: 1–64 characters, letters, digits, space,
// '-', '_' and '.'.
func validDisplayName(name string) bool {
	n := utf8.RuneCountInString(name)
	if n < 1 || n > 64 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" -_.", r) {
			return false
		}
	}
	return true
}

// hintBase folds a display name into the stem of a hint: lower case, runs of anything but
// a–z and 0–9 folded to '-', trimmed of '-', cut to 32 characters.
func hintBase(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 32 {
		s = strings.TrimRight(s[:32], "-")
	}
	if s == "" {
		s = "maker"
	}
	return s
}

// newHint draws a hint for a display name that no party or pending registration uses.
func (a *applier) newHint(name string) string {
	base := hintBase(name)
	for {
		h := base + "-" + a.d.IDs.Suffix(6)
		if _, taken := a.d.HintIndex[h]; !taken {
			return h
		}
	}
}

// registerStart creates a pending registration and asks the ledger for the new party's
// topology; the reply waits for it.
func (a *applier) registerStart(c RegisterStart) {
	if !validDisplayName(c.DisplayName) {
		a.refuse(badRequest("displayName must be 1 to 64 letters, digits, spaces, '-', '_' or '.'"))
		return
	}
	if len(c.PublicKey) != ed25519.PublicKeySize {
		a.refuse(badRequest("publicKey must be the 32-byte raw Ed25519 public key, base64"))
		return
	}
	if a.d.registrationsFull() {
		a.refuse(errRegistrationsFull(a.d.Cfg.MaxPendingRegistrations))
		return
	}
	r := &Registration{
		ID:          a.d.IDs.New(prefixRegistration),
		State:       RegOnboarding,
		DisplayName: c.DisplayName,
		PublicKey:   append([]byte(nil), c.PublicKey...),
		ExpiresAt:   a.d.Now.Add(a.d.Cfg.RegistrationLifetime),
	}
	r.Hint = a.newHint(c.DisplayName)
	a.d.HintIndex[r.Hint] = "" // reserved until the registration completes or expires
	a.d.Registrations[r.ID] = r
	a.at(r.ExpiresAt, DLRegistration, r.ID)
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contOnboard, Entity: r.ID, Waiting: 1}
	a.call(LedgerCall{CommandID: r.ID + ":onboard", Op: OpOnboard, Hint: r.Hint, PublicKey: r.PublicKey},
		&Continuation{Kind: contOnboard, ReqSeq: a.seq, Entity: r.ID})
}

// onboarded handles the ledger's topology for a pending registration.
func (a *applier) onboarded(cont *Continuation, res LedgerResult) {
	r, ok := a.d.Registrations[cont.Entity]
	if !ok || !a.d.m().registration.can(r, TrigTopologyReady) {
		if _, held := a.d.Held[cont.ReqSeq]; held {
			a.refuseTo(cont.ReqSeq, gone("the registration expired before the ledger answered; start again"))
		}
		return
	}
	if res.Failure != nil {
		a.d.m().registration.must(r, TrigLedgerFailed)
		a.releaseRegistration(r)
		a.refuseTo(cont.ReqSeq, ledgerRefusal(res.Failure))
		return
	}
	r.PartyID = res.PartyID
	r.Topology = res.Topology
	a.d.m().registration.must(r, TrigTopologyReady)
	dto := RegisterStartDTO{RegistrationID: r.ID, PartyID: r.PartyID, Topology: make([]TopologyDTO, len(r.Topology))}
	for i, t := range r.Topology {
		dto.Topology[i] = TopologyDTO(t)
	}
	a.replyTo(cont.ReqSeq, 200, dto)
}

// releaseRegistration frees what a registration that will never complete holds: its hint
// reservation. The registration itself stays readable until forgotten, so a late complete
// is answered 410 rather than 404.
func (a *applier) releaseRegistration(r *Registration) {
	if id, ok := a.d.HintIndex[r.Hint]; ok && id == "" {
		delete(a.d.HintIndex, r.Hint)
	}
}

// expireRegistration ends a registration whose 10 minutes passed. One already completed is
// forgotten; one still completing with the ledger is left to the ledger's answer.
func (a *applier) expireRegistration(id string) {
	r, ok := a.d.Registrations[id]
	if !ok {
		return
	}
	switch r.State {
	case RegOnboarding, RegAwaiting:
		a.d.m().registration.must(r, TrigExpire)
		a.releaseRegistration(r)
		// Remember it as expired for one more lifetime, then forget it.
		a.at(a.d.Now.Add(a.d.Cfg.RegistrationLifetime), DLRegistration, id)
	case RegCompleting:
		a.at(a.d.Now.Add(a.d.Cfg.RegistrationLifetime), DLRegistration, id)
	default:
		delete(a.d.Registrations, id)
	}
}

// registerComplete hands the topology signatures to the ledger; the reply waits for it.
func (a *applier) registerComplete(c RegisterComplete) {
	r, ok := a.d.Registrations[c.RegistrationID]
	if !ok {
		a.refuse(notFound("unknown registration %q", c.RegistrationID))
		return
	}
	switch r.State {
	case RegExpired, RegFailed:
		a.refuse(gone("the registration expired; call register/start again"))
		return
	case RegCompleted:
		a.refuse(conflict("the registration is already complete"))
		return
	case RegOnboarding, RegCompleting:
		a.refuse(apiErr(409, CodeRetryLater, "the registration is still being processed"))
		return
	}
	if len(c.Signatures) != len(r.Topology) {
		a.refuse(badRequest("expected %d signatures, one per topology hash in order, got %d", len(r.Topology), len(c.Signatures)))
		return
	}
	if len(c.NewKeyHash) != 64 {
		a.refuse(badRequest("missing key hash")) // a transport bug, never a client's
		return
	}
	r.KeyHash = c.NewKeyHash
	a.d.m().registration.must(r, TrigSignaturesIn)
	a.d.Held[a.seq] = &HeldReply{Seq: a.seq, Kind: contComplete, Entity: r.ID, Waiting: 1}
	sigs := make([][]byte, len(c.Signatures))
	for i, s := range c.Signatures {
		sigs[i] = append([]byte(nil), s...)
	}
	a.call(LedgerCall{CommandID: r.ID + ":complete:" + a.d.IDs.Suffix(6), Op: OpCompleteOnboarding, PartyID: r.PartyID, Signatures: sigs},
		&Continuation{Kind: contComplete, ReqSeq: a.seq, Entity: r.ID})
}

// onboardingCompleted creates the party once the ledger allocated it.
func (a *applier) onboardingCompleted(cont *Continuation, res LedgerResult) {
	r, ok := a.d.Registrations[cont.Entity]
	if !ok || !a.d.m().registration.can(r, TrigOnboarded) {
		return
	}
	if res.Failure != nil {
		// The key the failed request would have handed out is forgotten: a refused
		// complete leaves the registration as it was.
		r.KeyHash = ""
		if res.Failure.Category == LedgerBadSignature {
			a.d.m().registration.must(r, TrigSignaturesBad)
			a.refuseTo(cont.ReqSeq, unauthorized("a topology signature does not verify with the registered public key"))
		} else {
			a.d.m().registration.must(r, TrigLedgerFailed)
			a.refuseTo(cont.ReqSeq, ledgerRefusal(res.Failure))
		}
		if r.ExpiresAt.After(a.d.Now) {
			return
		}
		a.d.m().registration.must(r, TrigExpire)
		a.releaseRegistration(r)
		return
	}
	a.d.m().registration.must(r, TrigOnboarded)
	p := &Party{ID: r.PartyID, Hint: r.Hint, DisplayName: r.DisplayName, PublicKey: r.PublicKey, KeyHash: r.KeyHash, RegisteredAt: a.d.Now}
	a.d.Parties[p.ID] = p
	a.d.HintIndex[p.Hint] = p.ID
	a.d.KeyIndex[p.KeyHash] = p.ID
	r.KeyHash = ""
	a.replyTo(cont.ReqSeq, 200, RegisterCompleteDTO{PartyID: p.ID, Hint: p.Hint, Actions: []SignActionDTO{}})
	a.requestPreapproval(p, "auto")
}

// requestPreapproval asks the ledger for the party's receive preapproval where the network
// needs one. Nobody waits for the answer: SPEC says funds arrival is checked on the wallet.
func (a *applier) requestPreapproval(p *Party, why string) {
	if !a.d.Cfg.Network.PreapprovalNeeded() {
		return
	}
	cmdID := p.ID + ":preapproval:" + why + ":" + a.d.IDs.Suffix(6)
	a.call(LedgerCall{CommandID: cmdID, Op: OpSubmit, ActAs: a.d.Cfg.Operator,
		Command: &Command{CreatePreapproval: &CreatePreapprovalCmd{Receiver: p.ID}}},
		&Continuation{Kind: contPreapproval, Entity: p.ID})
}

// preapproval is POST /maker/preapproval: idempotent, always {ok: true}.
func (a *applier) preapproval(p *Party) {
	a.requestPreapproval(p, "manual")
	a.reply(200, OKDTO{OK: true})
}

// challenge issues a one-shot key-rotation challenge.
func (a *applier) challenge(c ChallengeRequest) {
	p, ok := a.d.Parties[c.PartyID]
	if !ok || p.deskSigned() {
		a.refuse(notFound("unknown party %q", c.PartyID))
		return
	}
	if c.Challenge == "" || len(c.Challenge) > 256 {
		a.refuse(badRequest("missing challenge")) // a transport bug, never a client's
		return
	}
	ch := &Challenge{Text: c.Challenge, PartyID: p.ID, ExpiresAt: a.d.Now.Add(a.d.Cfg.ChallengeLifetime)}
	a.d.Challenges[ch.Text] = ch
	a.at(ch.ExpiresAt, DLChallenge, ch.Text)
	a.reply(200, ChallengeDTO{Challenge: ch.Text})
}

func (a *applier) expireChallenge(text string) {
	if ch, ok := a.d.Challenges[text]; ok && !ch.ExpiresAt.After(a.d.Now) {
		delete(a.d.Challenges, text)
	}
}

// rotateKey replaces a party's API key after checking its signature over the challenge.
// The challenge is consumed by the first rotate that names it, whatever the outcome.
func (a *applier) rotateKey(c RotateKey) {
	p, ok := a.d.Parties[c.PartyID]
	if !ok || p.deskSigned() {
		a.refuse(notFound("unknown party %q", c.PartyID))
		return
	}
	ch, ok := a.d.Challenges[c.Challenge]
	if !ok || ch.ExpiresAt.Before(a.d.Now) || !ch.ExpiresAt.After(a.d.Now) {
		a.refuse(gone("the challenge expired or was already used; request a new one"))
		return
	}
	delete(a.d.Challenges, c.Challenge)
	if ch.PartyID != p.ID {
		a.refuse(unauthorized("the challenge was issued to another party"))
		return
	}
	if len(c.Signature) != ed25519.SignatureSize || !ed25519.Verify(p.PublicKey, []byte(c.Challenge), c.Signature) {
		a.refuse(unauthorized("the signature does not verify with the party key"))
		return
	}
	if len(c.NewKeyHash) != 64 {
		a.refuse(badRequest("missing key hash"))
		return
	}
	old := p.KeyHash
	delete(a.d.KeyIndex, old)
	p.KeyHash = c.NewKeyHash
	a.d.KeyIndex[p.KeyHash] = p.ID
	var closed []uint64
	for _, id := range sortedKeys(a.d.Sockets) {
		if s := a.d.Sockets[id]; s.PartyID == p.ID && s.KeyHash == old {
			if !a.quiet {
				a.out.Closes = append(a.out.Closes, SocketClose{Socket: id, Code: CloseUnauthorized, Reason: "API key rotated"})
			}
			closed = append(closed, id)
		}
	}
	a.dropSockets(closed) // the party may go offline: cancel-on-disconnect applies
	a.voidStreamTickets(old)
	a.reply(200, APIKeyDTO{})
}

// socketOpened authenticates a new stream socket and sends it the snapshot. A socket
// opened with a ticket redeems it here and is bound to the ticket's key.
func (a *applier) socketOpened(in SocketOpened) {
	if in.TicketHash != "" {
		in.KeyHash = a.redeemStreamTicket(in.TicketHash)
	}
	p, ok := a.d.partyByKey(in.KeyHash)
	if !ok {
		if !a.quiet {
			a.out.Closes = append(a.out.Closes, SocketClose{Socket: in.Socket, Code: CloseUnauthorized, Reason: "unknown or missing API key"})
		}
		return
	}
	if _, dup := a.d.Sockets[in.Socket]; dup {
		return
	}
	a.d.Sockets[in.Socket] = &Socket{ID: in.Socket, PartyID: p.ID, KeyHash: in.KeyHash, CancelOnDisconnect: in.CancelOnDisconnect}
	p.Online++
	if a.quiet {
		return // the binding and the connect-time snapshot are outputs only
	}
	a.out.Bindings = append(a.out.Bindings, SocketBinding{Socket: in.Socket, Party: p.ID})
	a.resumeOrSnapshot(p, in)
}

// socketClosed forgets a socket; the party goes offline with its last one, and
// cancel-on-disconnect applies then.
func (a *applier) socketClosed(in SocketClosed) { a.dropSockets([]uint64{in.Socket}) }

func (a *applier) dropSocket(id uint64) {
	s, ok := a.d.Sockets[id]
	if !ok {
		return
	}
	delete(a.d.Sockets, id)
	if p, ok := a.d.Parties[s.PartyID]; ok && p.Online > 0 {
		p.Online--
	}
}

// ledgerRefusal maps a ledger failure on a call the client waits for to an HTTP refusal.
func ledgerRefusal(f *LedgerFailure) *APIError {
	switch f.Category {
	case LedgerUnavailable, LedgerInternal, LedgerUnknownOutcome:
		return unavailable(CodeRetryLater, "the ledger is unavailable or busy: %s", f.Message)
	case LedgerContention:
		return conflict("contract contention on the ledger: %s", f.Message)
	case LedgerInactive:
		return conflict("a contract it needs was spent on the ledger: %s", f.Message)
	case LedgerInsufficientFunds:
		return apiErr(409, CodeInsufficientFunds, "free holdings cannot cover it: %s", f.Message)
	case LedgerNotFound:
		return notFound("not found on the ledger: %s", f.Message)
	case LedgerNotSupported:
		return notImplemented("not supported on this network: %s", f.Message)
	case LedgerExpired:
		return gone("expired on the ledger: %s", f.Message)
	default:
		return badGateway("the ledger rejected the command: %s", f.Message)
	}
}
