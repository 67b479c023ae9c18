package model

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// command decides this input's answer. It reports false for an input kind it does not know.
func (s *step) command(in machine.Input) bool {
	switch c := in.(type) {
	case machine.RegisterStart:
		s.route = "POST /maker/register/start"
		s.registerStart(c)
		return true
	case machine.RegisterComplete:
		s.route, s.target = "POST /maker/register/complete ", c.RegistrationID
		s.registerComplete(c)
		return true
	case machine.ChallengeRequest:
		s.route, s.target = "POST /maker/challenge for ", c.PartyID
		s.challenge(c)
		return true
	case machine.RotateKey:
		s.route, s.target = "POST /maker/api-key/rotate for ", c.PartyID
		s.rotate(c)
		return true
	}
	var keyHash string
	switch c := in.(type) {
	case machine.Preapproval:
		keyHash, s.route = c.KeyHash, "POST /maker/preapproval"
	case machine.CreateRFQ:
		keyHash, s.route = c.KeyHash, "POST /rfq"
	case machine.CancelRFQ:
		keyHash, s.route, s.target = c.KeyHash, "DELETE /rfq/", c.RFQID
	case machine.SubmitQuote:
		keyHash, s.route, s.target = c.KeyHash, "POST /maker/quotes on ", c.RFQID
	case machine.DeleteQuote:
		keyHash, s.route, s.target = c.KeyHash, "DELETE /maker/quotes/", c.QuoteID
	case machine.CancelAllQuotes:
		keyHash, s.route = c.KeyHash, "DELETE /maker/quotes"
	case machine.DeclineRFQ:
		keyHash, s.route, s.target = c.KeyHash, "POST /maker/rfq/", c.RFQID+"/decline "+c.Reason
	case machine.AcceptQuote:
		keyHash, s.route, s.target = c.KeyHash, "POST /quote/", c.QuoteID+"/accept"
	case machine.ExecuteActions:
		keyHash, s.route = c.KeyHash, "POST /tx/execute"
	case machine.AcceptIncoming:
		keyHash, s.route, s.target = c.KeyHash, "POST /wallet/incoming/", c.CID+"/accept"
	case machine.Withdraw:
		keyHash, s.route, s.target = c.KeyHash, "POST /wallet/withdraw ", c.Symbol
	case machine.FaucetDraw:
		keyHash, s.route = c.KeyHash, "POST /faucet"
	case machine.SetProtection:
		keyHash, s.route = c.KeyHash, "PUT /maker/protection"
	case machine.ResetProtection:
		keyHash, s.route = c.KeyHash, "POST /maker/protection/reset"
	case machine.IssueStreamTicket:
		keyHash, s.route = c.KeyHash, "POST /maker/stream/ticket"
	default:
		return false
	}
	p := s.authenticate(keyHash)
	if p == nil {
		return true
	}
	s.caller = p
	switch c := in.(type) {
	case machine.Preapproval:
		s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
			if ok, _ := rep.Body.(machine.OKDTO); !ok.OK {
				return "the body is not {ok: true}"
			}
			return ""
		}}
	case machine.CreateRFQ:
		s.createRFQ(p, c)
	case machine.CancelRFQ:
		s.cancelRFQ(p, c)
	case machine.SubmitQuote:
		s.submitQuote(p, c)
	case machine.DeleteQuote:
		s.deleteQuote(p, c)
	case machine.CancelAllQuotes:
		s.cancelAllQuotes(p)
	case machine.DeclineRFQ:
		s.declineRFQ(p, c)
	case machine.AcceptQuote:
		s.acceptQuote(p, c)
	case machine.ExecuteActions:
		s.execute(p, c)
	case machine.AcceptIncoming:
		s.waitMaybe(&Request{Kind: "incoming.accept", Party: p.ID})
	case machine.Withdraw:
		s.withdraw(p, c)
	case machine.FaucetDraw:
		s.faucet(p)
	case machine.SetProtection:
		s.setProtection(p, c)
	case machine.ResetProtection:
		s.resetProtection(p)
	case machine.IssueStreamTicket:
		s.streamTicket(p, c)
	}
	return true
}

// wait records a request whose answer needs the ledger.
func (s *step) wait(r *Request) {
	r.Seq, r.At = s.env.Seq, s.at
	s.m.st.Reqs[r.Seq] = r
	s.async = true
}

// waitMaybe records a request that may be answered at once or only after the ledger.
func (s *step) waitMaybe(r *Request) {
	r.Seq, r.At = s.env.Seq, s.at
	s.m.st.Reqs[r.Seq] = r
}

// authenticate resolves the key hash the input carried to its party, as the desk did (a
// key this input was answered 401 for is not accepted), and names the caller in s.by. An
// unknown key expects 401 (SPEC, Authentication 3: authenticate first) and returns nil.
func (s *step) authenticate(keyHash string) *Party {
	p := s.m.resolve(keyHash, !s.repliedWith(401))
	if p == nil {
		s.by = "an unknown key"
		s.immediate = one(401, "")
		return nil
	}
	s.by = p.Hint
	return p
}

// repliedWith reports whether this input's own reply has the status.
func (s *step) repliedWith(status int) bool {
	for _, rep := range s.out.Replies {
		if rep.Seq == s.env.Seq && rep.Status == status {
			return true
		}
	}
	return false
}

// ---- registration ----

// fingerprint is DECISIONS' party-id fingerprint: SHA-256 over the 4-byte big-endian
// hash purpose 12 and the raw Ed25519 key, as hex after the multihash prefix 1220.
func fingerprint(pub []byte) string {
	var purpose [4]byte
	binary.BigEndian.PutUint32(purpose[:], 12)
	h := sha256.New()
	h.Write(purpose[:])
	h.Write(pub)
	return "1220" + hex.EncodeToString(h.Sum(nil))
}

// hintStem is DECISIONS' hint before its suffix: the display name lower-cased, runs of
// other characters folded to '-', cut to 32 characters.
func hintStem(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > 32 {
		out = out[:32]
	}
	return out
}

func (s *step) registerStart(c machine.RegisterStart) {
	if len(c.PublicKey) != ed25519.PublicKeySize || len(c.DisplayName) == 0 || len(c.DisplayName) > 64 {
		// DECISIONS: a 32-byte key and a display name of 1 to 64 characters.
		s.immediate = one(400, "")
		return
	}
	s.wait(&Request{Kind: "register.start", Hint: hintStem(c.DisplayName), PublicKey: append([]byte(nil), c.PublicKey...)})
}

func (s *step) registerComplete(c machine.RegisterComplete) {
	reg, ok := s.m.st.Regs[c.RegistrationID]
	switch {
	case !ok:
		// Unknown, or forgotten after it expired: 404 or 410 (SPEC: completing an expired
		// registration is 410; one the desk forgot looks unknown), 400 for a malformed one.
		s.immediate = &expect{alts: []sc{{404, ""}, {410, ""}, {400, ""}}}
	case reg.Completed:
		s.immediate = &expect{alts: []sc{{404, ""}, {409, ""}, {410, ""}}}
	case reg.Expires.Before(s.at):
		s.immediate = one(410, "")
	default:
		// Exactly at its expiry the contract's "10 minutes after" reads either way: the
		// answer is judged when it comes, 410 among the allowed ones.
		// The signatures are over topology hashes the model never sees: the ledger judges
		// them, and a refusal comes with its answer (400 or 401 among the allowed ones).
		s.waitMaybe(&Request{Kind: "register.complete", Registration: c.RegistrationID, NewKeyHash: c.NewKeyHash})
	}
}

func (s *step) challenge(c machine.ChallengeRequest) {
	p := s.m.party(c.PartyID)
	if p == nil || p.DeskSigned {
		s.immediate = &expect{alts: []sc{{404, ""}, {400, ""}}} // DECISIONS: an unknown partyId is 404
		return
	}
	want := c.Challenge
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		d, ok := rep.Body.(machine.ChallengeDTO)
		if !ok || d.Challenge != want {
			return "the body does not carry the challenge drawn for it"
		}
		return ""
	}}
	s.m.st.Challenges[c.Challenge] = &Challenge{Party: p.ID, Expires: s.at.Add(s.m.st.Cfg.ChallengeLifetime)}
	s.m.watch(s.at.Add(s.m.st.Cfg.ChallengeLifetime), dueChal, c.Challenge)
}

func (s *step) rotate(c machine.RotateKey) {
	m := s.m
	p := m.party(c.PartyID)
	ch := m.st.Challenges[c.Challenge]
	switch {
	case p == nil || p.DeskSigned:
		s.immediate = &expect{alts: []sc{{404, ""}, {400, ""}}}
		return
	case ch == nil || ch.Party != p.ID:
		// An unknown or consumed challenge: refused (the contract names 410 for an
		// expired one; one already consumed or never issued is refused too).
		s.immediate = &expect{alts: []sc{{400, ""}, {401, ""}, {404, ""}, {409, ""}, {410, ""}}}
		return
	case ch.Expires.Before(s.at):
		s.immediate = &expect{alts: []sc{{410, ""}}}
		delete(m.st.Challenges, c.Challenge)
		return
	case ch.Expires.Equal(s.at) && !s.repliedWith(200):
		// Exactly at its expiry (5 minutes, DECISIONS) either reading is allowed: a
		// refusal is 410, and a rotation is judged as one.
		s.immediate = &expect{alts: []sc{{410, ""}}}
		delete(m.st.Challenges, c.Challenge)
		return
	case !ed25519.Verify(p.PublicKey, []byte(c.Challenge), c.Signature):
		s.immediate = one(401, "") // DECISIONS: a bad signature on rotate is 401
		return
	}
	delete(m.st.Challenges, c.Challenge)
	s.immediate = &expect{alts: []sc{{200, ""}}}
	// The old key stops at once and its sockets close with 4401.
	for k := range p.Keys {
		delete(m.st.Keys, k)
	}
	p.Keys = map[string]bool{c.NewKeyHash: true}
	m.st.Keys[c.NewKeyHash] = p.ID
	m.voidTickets(p.ID) // docs/api.md: a rotation voids the key's tickets
	var dropped []uint64
	for _, id := range slices.Sorted(maps.Keys(m.st.Sockets)) { // in order: a failure names the same socket in a replay
		if sk := m.st.Sockets[id]; sk.Party == p.ID {
			dropped = append(dropped, id)
			closed := false
			for _, cl := range s.out.Closes {
				if cl.Socket == id && cl.Code == machine.CloseUnauthorized {
					closed = true
				}
			}
			if !closed {
				s.failf("socket %d of %s, opened with the rotated key, was not closed with 4401", id, p.Hint)
			}
		}
	}
	s.dropSockets(dropped) // the party goes offline: cancel-on-disconnect applies
}

// ---- RFQs ----

func (s *step) createRFQ(p *Party, c machine.CreateRFQ) {
	m := s.m
	cfg := &m.st.Cfg
	plain := false // a plain 400 applies
	if c.Direction != machine.Sell && c.Direction != machine.Buy {
		plain = true
	}
	qty, err := parseDec(decStr(c.Qty))
	if err != nil || qty.Sign() <= 0 {
		plain = true
	}
	base, okB := m.instrument(c.Base)
	quote, okQ := m.instrument(c.Quote)
	if !okB || !okQ || base.Symbol == quote.Symbol {
		plain = true
	}
	minTTL, maxTTL := int64(cfg.MinTTL/time.Second), int64(cfg.MaxTTL/time.Second)
	if c.TTLSeconds < minTTL || c.TTLSeconds > maxTTL {
		plain = true
	}
	if len(c.InvitedMakers) == 0 || len(c.InvitedMakers) > machine.MaxInvited {
		plain = true
	}
	var inv []string
	seen := map[string]bool{}
	for _, h := range c.InvitedMakers {
		id, ok := m.st.Hints[h]
		mk := m.party(id)
		switch {
		case !ok || mk == nil, id == p.ID, seen[id], mk.Online == 0:
			plain = true // unknown, oneself, twice, or not reachable: 400
		}
		seen[id] = true
		inv = append(inv, id)
	}
	below, bps := false, 0
	if !plain {
		// The notional is qty × usdPrice(base), exactly: compared with the minimum and
		// the tiers as the exact product, never a rounded one.
		exact := notional(qty, m.usd[base.Symbol])
		below, bps = exact.Cmp(m.minUSD) < 0, tierFor(m.tiers, exact)
	}
	switch {
	case plain:
		s.immediate = one(400, "")
		return
	case below:
		s.immediate = one(400, machine.CodeBelowMinNotional)
		return
	}
	ttl := time.Duration(c.TTLSeconds) * time.Second
	r := &RFQ{
		Taker: p.ID, Sell: c.Direction == machine.Sell, Qty: mustFormat(qty), Base: base.Symbol,
		Quote: quote.Symbol, Deadline: s.at.Add(ttl), Invited: inv, FeeBps: bps, Open: true,
		Notional: mustFormat(trunc10(notional(qty, m.usd[base.Symbol]))),
	}
	s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
		d, ok := asRfq(rep.Body)
		if !ok {
			return "the body is not an RfqDto"
		}
		if !strings.HasPrefix(d.RfqID, "rfq_") {
			return fmt.Sprintf("rfqId %q lacks the rfq_ prefix", d.RfqID)
		}
		if _, dup := m.st.RFQs[d.RfqID]; dup {
			return fmt.Sprintf("rfqId %s names an RFQ that already exists", d.RfqID)
		}
		r.ID = d.RfqID
		if msg := s.m.checkRfqDTO(d, r); msg != "" {
			return msg
		}
		if d.Quotes != nil {
			return "the create answer carries quotes"
		}
		m.st.RFQs[r.ID] = r
		m.index(r, true)
		m.scoreInvited(r, s.at)
		m.watch(r.Deadline, dueRFQ, r.ID)
		s.createdRFQ = r.ID
		return ""
	}}
}

// checkRfqDTO compares an RfqDto with the model's RFQ.
func (m *Model) checkRfqDTO(d machine.RfqDTO, r *RFQ) string {
	dir := machine.Buy
	if r.Sell {
		dir = machine.Sell
	}
	sameInvited := len(d.InvitedMakers) == len(r.Invited)
	for i := 0; sameInvited && i < len(r.Invited); i++ {
		sameInvited = d.InvitedMakers[i] == m.hintOf(r.Invited[i])
	}
	switch {
	case d.RfqID != r.ID:
		return fmt.Sprintf("rfqId is %s, not %s", d.RfqID, r.ID)
	case d.Taker != m.hintOf(r.Taker):
		return fmt.Sprintf("RFQ %s: taker is %q, not %q", r.ID, d.Taker, m.hintOf(r.Taker))
	case d.Direction != dir:
		return fmt.Sprintf("RFQ %s: direction is %s, not %s", r.ID, d.Direction, dir)
	case decStr(d.Qty) != r.Qty:
		return fmt.Sprintf("RFQ %s: qty is %q, not %q", r.ID, decStr(d.Qty), r.Qty)
	case d.Base != r.Base || d.Quote != r.Quote:
		return fmt.Sprintf("RFQ %s: pair is %s/%s, not %s/%s", r.ID, d.Base, d.Quote, r.Base, r.Quote)
	case !sameTime(d.Deadline, r.Deadline):
		return fmt.Sprintf("RFQ %s: deadline is %s, not %s (creation + ttlSeconds)", r.ID, wireTime(time.Time(d.Deadline)), wireTime(r.Deadline))
	case !sameInvited:
		var hints []string
		for _, id := range r.Invited {
			hints = append(hints, m.hintOf(id))
		}
		return fmt.Sprintf("RFQ %s: invitedMakers are %v, not %v", r.ID, d.InvitedMakers, hints)
	case d.FeeBps != r.FeeBps:
		return fmt.Sprintf("RFQ %s: feeBps is %d, not %d (the tier of its notional)", r.ID, d.FeeBps, r.FeeBps)
	case d.Open != r.Open:
		return fmt.Sprintf("RFQ %s: open is %v, not %v", r.ID, d.Open, r.Open)
	}
	return ""
}

func (s *step) cancelRFQ(p *Party, c machine.CancelRFQ) {
	m := s.m
	r := m.st.RFQs[c.RFQID]
	switch {
	case r == nil:
		s.immediate = one(404, "")
	case r.Taker != p.ID:
		s.immediate = one(403, "")
	case !r.Open:
		s.immediate = one(404, "")
	case r.Settling != "" || r.Accepting != 0:
		s.immediate = one(409, "") // DECISIONS: 409 while a settlement is in flight on it
	default:
		e := &expect{alts: []sc{{204, ""}}, body: func(machine.Reply) string {
			r.Open, r.ClosedAt = false, s.at
			r.Forget = housekeepingAt(s.at.Add(m.st.Cfg.ClosedRetention))
			m.watch(r.Forget, dueForget, r.ID)
			put(&s.cancelled, r.ID, true)
			return ""
		}}
		if !r.Deadline.After(s.at) {
			// The deadline passed but no Tick has expired the RFQ yet: the contract's
			// "deadline passed" 409 and the cancel of a still-open RFQ are both allowed.
			e.alts = append(e.alts, sc{409, ""})
		}
		s.immediate = e
	}
}

// ---- quotes ----

// newestOn returns the maker's newest recorded quote on an RFQ, and whether a submission
// of the maker on it still waits (newer than any recorded one).
func (m *Model) newestOn(r *RFQ, maker string) (*Quote, *Request) {
	var pend *Request
	for _, req := range m.st.Reqs {
		if req.Kind == "quote.submit" && req.RFQ == r.ID && req.Party == maker && (pend == nil || req.Seq > pend.Seq) {
			pend = req
		}
	}
	for i := len(r.Quotes) - 1; i >= 0; i-- {
		if q := m.st.Quotes[r.Quotes[i]]; q != nil && q.Maker == maker {
			return q, pend
		}
	}
	return nil, pend
}

// openRFQFor decides the first refusals of a maker's call on an RFQ (a quote, a decline):
// SPEC's 404 for an unknown RFQ, 403 when not invited, 404 when closed. It returns nil
// when the call is refused so.
func (s *step) openRFQFor(p *Party, id string) *RFQ {
	r := s.m.st.RFQs[id]
	switch {
	case r == nil:
		s.immediate = one(404, "")
	case !invited(r, p.ID):
		s.immediate = one(403, "")
	case !r.Open:
		s.immediate = one(404, "")
	default:
		return r
	}
	return nil
}

func (s *step) submitQuote(p *Party, c machine.SubmitQuote) {
	m := s.m
	if s.frozenQuote(p) {
		return
	}
	r := s.openRFQFor(p, c.RFQID)
	if r == nil {
		return
	}
	// Every other refusal is 409 with or without a code; when several apply the contract
	// does not order them, so any of their codes is allowed.
	var alts []sc
	add := func(code string) { alts = append(alts, sc{409, code}) }
	if !r.Deadline.After(s.at) {
		add("") // SPEC, Errors rule 1
	}
	validUntil := s.at.Add(m.st.Cfg.QuoteLifetime)
	if validUntil.After(r.Deadline) {
		validUntil = r.Deadline
	}
	if c.ValidUntil != nil {
		validUntil = c.ValidUntil.UTC()
		if !validUntil.After(s.at) || validUntil.After(r.Deadline) {
			add("") // DECISIONS: validUntil == deadline is allowed; after it or in the past is 409
		}
	}
	price, err := parseDec(decStr(c.Price))
	if err != nil {
		s.immediate = one(400, "")
		return
	}
	if price.Sign() <= 0 {
		add(machine.CodeDustTrade) // docs/architecture.md: a zero price is DUST_TRADE
	}
	if r.Settling != "" || r.Accepting != 0 {
		add("")
	}
	if len(alts) == 0 {
		qty, _ := parseDec(r.Qty)
		qa := quoteAmount(qty, price)
		if why := dust(r.Sell, qty, qa, fee(qa, r.FeeBps), r.FeeBps); why != "" {
			add(machine.CodeDustTrade)
		}
	}
	if len(alts) > 0 {
		s.immediate = &expect{alts: alts}
		return
	}
	// The replacement: the maker's newest quote on the RFQ goes now.
	old, pend := m.newestOn(r, p.ID)
	if pend != nil {
		// Its own submission was not answered yet: it is refused now (a replaced quote
		// that was never recorded), with a 409.
		pend.Kind = "quote.submit.replaced"
	} else if old != nil && old.Status == "pending" {
		put(&s.revoking, old.ID, true)
	}
	s.wait(&Request{Kind: "quote.submit", Party: p.ID, RFQ: r.ID, Price: mustFormat(price), ValidUntil: validUntil})
}

func (s *step) deleteQuote(p *Party, c machine.DeleteQuote) {
	m := s.m
	q := m.st.Quotes[c.QuoteID]
	switch {
	case q == nil:
		s.immediate = one(404, "")
	case q.Maker != p.ID:
		s.immediate = one(403, "")
	case q.Settling:
		s.immediate = one(409, "")
	case q.Status != "pending":
		s.immediate = one(404, "")
	default:
		e := &expect{alts: []sc{{204, ""}}, body: func(machine.Reply) string {
			put(&s.revoking, q.ID, true)
			return ""
		}}
		if m.beingAccepted(q) {
			// An accept of it may be with the ledger: until its answer the quote is not yet
			// settling, and the contract's 409 and the delete are both allowed.
			e.alts = append(e.alts, sc{409, ""})
		}
		s.immediate = e
	}
}

func (s *step) acceptQuote(p *Party, c machine.AcceptQuote) {
	m := s.m
	q := m.st.Quotes[c.QuoteID]
	if q == nil {
		s.immediate = one(404, "")
		return
	}
	r := m.st.RFQs[q.RFQ]
	switch {
	case r == nil || r.Taker != p.ID:
		if !q.Anchored {
			s.immediate = one(404, "") // a quote not landed is invisible; no 403 reveals it
		} else {
			s.immediate = one(403, "")
		}
		return
	case !q.Anchored:
		s.immediate = one(404, "") // docs/architecture.md: allocations not landed: 404
		return
	case q.Settling || r.Settling != "" || r.Accepting != 0:
		s.immediate = one(409, "")
		return
	case q.Status != "pending":
		s.immediate = one(409, "")
		return
	case !r.Open || !r.Deadline.After(s.at) || !q.ValidUntil.After(s.at):
		s.immediate = one(409, "")
		return
	}
	r.Accepting = s.env.Seq
	s.wait(&Request{Kind: "quote.accept", Party: p.ID, Quote: q.ID, RFQ: r.ID})
}

// ---- sign actions ----

func (s *step) execute(p *Party, c machine.ExecuteActions) {
	m := s.m
	if len(c.Entries) == 0 || len(c.Entries) > m.maxBatch() {
		s.immediate = one(400, "") // SPEC: at most 50 entries
		return
	}
	var ids []string
	var mine []bool
	for _, e := range c.Entries {
		ids = append(ids, e.ActionID)
		x := m.st.Actions[e.ActionID]
		mine = append(mine, x != nil && x.Party == p.ID)
	}
	defer func() {
		// The signatures went in: the flows the actions belong to may advance from now on
		// (the contract's "signed and executed"; the ledger's answer may come first).
		sent := map[string]bool{}
		for i, id := range ids {
			x := m.st.Actions[id]
			if !mine[i] || x == nil || s.immediate != nil {
				continue
			}
			x.Executed = true
			// The entries the desk cannot refuse at once (a repeat in the batch, an expired
			// action, a signature of the wrong length) go to the ledger: executing.
			if !sent[id] && x.ExpiresAt.After(s.at) && len(c.Entries[i].Signature) == 64 {
				x.Executing = true
			}
			sent[id] = true
		}
	}()
	req := &Request{Kind: "tx.execute", Party: p.ID, Entries: ids, Mine: mine, Batch: c.Batch}
	if !c.Batch {
		e := c.Entries[0]
		x := m.st.Actions[e.ActionID]
		switch {
		case x == nil || x.Party != p.ID:
			// Not the caller's, or gone: the contract's 404 (410 when it expired, 409 when
			// its contract is spent: the model does not always know which one ended it).
			s.immediate = &expect{alts: []sc{{404, ""}, {409, ""}, {410, ""}}}
			return
		case !x.ExpiresAt.After(s.at) && x.Executing:
			// Past its expiry but its execute may be with the ledger, which the desk waits
			// for: 409 RETRY_LATER while it is executing (docs/api.md), 410 once it is not.
			s.immediate = &expect{alts: []sc{{409, machine.CodeRetryLater}, {410, ""}, {404, ""}}}
			return
		case !x.ExpiresAt.After(s.at):
			s.immediate = &expect{alts: []sc{{410, ""}, {404, ""}}}
			return
		}
	}
	// A batch answers 200 (maybe only after the ledger answered): judged when it comes. A
	// bad signature is 400 (docs/architecture.md), at once or from the ledger's answer; the
	// model does not verify signatures again (a third of its cost), so a 400 is among the
	// answers it allows for a pending action.
	s.waitMaybe(req)
}

func (m *Model) maxBatch() int { return 50 }

// ---- wallet ----

func (s *step) withdraw(p *Party, c machine.Withdraw) {
	m := s.m
	cfg := &m.st.Cfg
	if cfg.Network == machine.Sandbox {
		s.immediate = one(501, "")
		return
	}
	in, ok := m.instrument(c.Symbol)
	if !ok {
		s.immediate = one(404, "") // SPEC: 404 for an unknown instrument
		return
	}
	amt, err := parseDec(decStr(c.Amount))
	if err != nil || amt.Sign() <= 0 || !strings.Contains(c.Receiver, "::") {
		s.immediate = one(400, "")
		return
	}
	key := p.ID + "|" + in.Symbol
	taken := &expect{alts: []sc{{409, ""}, {409, machine.CodeRetryLater}}}
	// SPEC: a second withdrawal while one awaits signature is 409; the desk's documented
	// choice for one still being prepared or executing is the transient RETRY_LATER.
	if _, busy := m.st.Withdraws[key]; busy {
		s.immediate = one(409, machine.CodeRetryLater) // its prepare is with the ledger
		return
	}
	if x := m.withdrawalAction(p.ID, in.Symbol); x != nil {
		s.immediate = one(409, "") // it awaits signature
		if x.Executing {
			// Its execute may be with the ledger (executing: RETRY_LATER), or an answer the
			// model cannot see put it back to pending (409).
			s.immediate = taken
		}
		return
	}
	if m.settlingIn(p.ID, in.Symbol) {
		s.immediate = one(409, machine.CodeRetryLater) // DECISIONS
		return
	}
	m.st.Withdraws[key] = s.env.Seq
	s.wait(&Request{Kind: "withdraw", Party: p.ID, Symbol: in.Symbol})
	var alts []sc
	if m.acceptingIn(p.ID, in.Symbol) {
		// An accept in the instrument is with the ledger: its trade may already count as
		// settling, so DECISIONS' 409 RETRY_LATER is allowed as well as the withdrawal.
		alts = append(alts, sc{409, machine.CodeRetryLater})
	}
	if m.st.OrphanWithdraws[key] || m.withdrawalOfUnknownInstrument(p.ID) {
		// A restart undid a withdraw request of the party whose prepare the desk carries
		// on: in this instrument (OrphanWithdraws), or in one the model cannot tell (an
		// action it made whose request the restart undid). The slot may still be taken.
		alts = append(alts, taken.alts...)
		if m.st.OrphanWithdraws[key] {
			s.orphanSlot = key
		}
	}
	if len(alts) > 0 {
		s.asyncOr = &expect{alts: alts}
	}
}

// withdrawalAction returns the party's transfer-out action in the instrument, if any.
func (m *Model) withdrawalAction(party, sym string) *Action {
	for _, id := range slices.Sorted(maps.Keys(m.st.Actions)) {
		if x := m.st.Actions[id]; x.Party == party && x.Purpose == "transfer-out" && x.Symbol == sym {
			return x
		}
	}
	return nil
}

// withdrawalOfUnknownInstrument reports a transfer-out action of the party whose
// instrument the model does not know (made after a restart undid its request).
func (m *Model) withdrawalOfUnknownInstrument(party string) bool {
	for _, x := range m.st.Actions {
		if x.Party == party && x.Purpose == "transfer-out" && x.Symbol == "" {
			return true
		}
	}
	return false
}

// acceptingIn reports whether an accept of a quote of the party (as taker or maker) in the
// instrument waits on the ledger.
func (m *Model) acceptingIn(party, sym string) bool {
	for _, r := range m.st.RFQs {
		if r.Accepting == 0 || (r.Base != sym && r.Quote != sym) {
			continue
		}
		if r.Taker == party {
			return true
		}
		if req := m.st.Reqs[r.Accepting]; req != nil {
			if q := m.st.Quotes[req.Quote]; q != nil && q.Maker == party {
				return true
			}
		}
	}
	return false
}

// settlingIn reports whether a trade of the party settles in the instrument.
func (m *Model) settlingIn(party, sym string) bool {
	for _, t := range m.st.Trades {
		if t.Status != "settling" || (t.Taker != party && t.Maker != party) {
			continue
		}
		if r := m.st.RFQs[t.RFQ]; r != nil && (r.Base == sym || r.Quote == sym) {
			return true
		}
	}
	return false
}

func (s *step) faucet(p *Party) {
	m := s.m
	cfg := &m.st.Cfg
	if cfg.Network != machine.Testnet || cfg.Reservoir == "" || len(m.faucetOffered()) == 0 {
		s.immediate = one(501, "") // SPEC: 501 where no faucet runs (nothing configured)
		return
	}
	if wait := m.retryAfter(p.ID, s.at); wait > 0 {
		// DECISIONS: during the cooldown, 200 with nothing sent, every offered token
		// skipped for "cooldown", and the whole seconds left, rounded up.
		s.immediate = &expect{alts: []sc{{200, ""}}, body: func(rep machine.Reply) string {
			return m.checkCooldownAnswer(rep, wait)
		}}
		return
	}
	s.waitMaybe(&Request{Kind: "faucet.draw", Party: p.ID})
	m.st.FaucetNext[p.ID] = s.at.Add(cfg.FaucetCooldown)
}

// faucetOffered lists the catalog entries one faucet draw offers, in catalog order.
func (m *Model) faucetOffered() []machine.Instrument {
	var out []machine.Instrument
	for _, in := range m.st.Cfg.Instruments {
		if in.FaucetAmount.Sign() > 0 {
			out = append(out, in)
		}
	}
	return out
}

// retryAfter is the party's cooldown left at time at in whole seconds, rounded up (SPEC:
// an integer, 0 when the party may draw now).
func (m *Model) retryAfter(party string, at time.Time) int {
	next, ok := m.st.FaucetNext[party]
	if !ok || !next.After(at) {
		return 0
	}
	d := next.Sub(at)
	return int((d + time.Second - 1) / time.Second)
}

// checkCooldownAnswer checks a draw answered during the cooldown: nothing sent, every
// offered token skipped for "cooldown" in catalog order, retryAfterSeconds the seconds left.
func (m *Model) checkCooldownAnswer(rep machine.Reply, left int) string {
	ans, ok := rep.Body.(machine.FaucetAnswer)
	if !ok {
		return fmt.Sprintf("a faucet draw during the cooldown is %T, not a draw answer", rep.Body)
	}
	offered := m.faucetOffered()
	if len(ans.Sent) != 0 || len(ans.Skipped) != len(offered) {
		return fmt.Sprintf("a faucet draw during the cooldown sent %d and skipped %d; the contract sends none and skips all %d offered",
			len(ans.Sent), len(ans.Skipped), len(offered))
	}
	for i, in := range offered {
		if sk := ans.Skipped[i]; sk.Symbol != in.Symbol || sk.Reason != "cooldown" {
			return fmt.Sprintf("a faucet draw during the cooldown skipped %s for %q at place %d; the contract skips %s for \"cooldown\"",
				sk.Symbol, sk.Reason, i, in.Symbol)
		}
	}
	if ans.RetryAfterSeconds != left {
		return fmt.Sprintf("a faucet draw during the cooldown says retry after %d s; the cooldown has %d s left (whole seconds, rounded up)",
			ans.RetryAfterSeconds, left)
	}
	return ""
}

// checkDrawAnswer checks a draw that went out: every offered token once, sent with its
// faucet amount or skipped for a reason the contract names, each list in catalog order,
// and retryAfterSeconds the cooldown left (0 when nothing went out).
func (m *Model) checkDrawAnswer(ans machine.FaucetAnswer, party string, at time.Time) string {
	offered := m.faucetOffered()
	si, ki := 0, 0
	for _, in := range offered {
		switch {
		case si < len(ans.Sent) && ans.Sent[si].Symbol == in.Symbol:
			sent := ans.Sent[si]
			if sent.Amount.Cmp(in.FaucetAmount) != 0 || sent.DisplaySymbol != in.Display {
				return fmt.Sprintf("the faucet sent %s %s (%s); the catalog offers %s (%s)",
					sent.Amount, sent.Symbol, sent.DisplaySymbol, in.FaucetAmount, in.Display)
			}
			si++
		case ki < len(ans.Skipped) && ans.Skipped[ki].Symbol == in.Symbol:
			switch r := ans.Skipped[ki].Reason; r {
			case "reservoir-empty", "preapproval-required", "unavailable":
			default:
				return fmt.Sprintf("the faucet skipped %s for %q, not a reason a draw that went out can have", in.Symbol, r)
			}
			ki++
		default:
			return fmt.Sprintf("the draw answer lacks %s or lists it out of catalog order (sent %d, skipped %d of %d offered)",
				in.Symbol, len(ans.Sent), len(ans.Skipped), len(offered))
		}
	}
	if si != len(ans.Sent) || ki != len(ans.Skipped) {
		return fmt.Sprintf("the draw answer lists %d sent and %d skipped; the faucet offers %d tokens",
			len(ans.Sent), len(ans.Skipped), len(offered))
	}
	if len(ans.Sent) == 0 {
		delete(m.st.FaucetNext, party) // the cooldown starts only when something went out
	}
	if want := m.retryAfter(party, at); ans.RetryAfterSeconds != want {
		return fmt.Sprintf("the draw answer says retry after %d s; the cooldown left is %d s", ans.RetryAfterSeconds, want)
	}
	return ""
}
