package transport

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/julienschmidt/httprouter"
)

// ---- Generic plumbing ----

// do sends a command to the desk and writes its reply.
func (s *Server) do(w http.ResponseWriter, r *http.Request, cmd machine.Command_) {
	rep, ok := s.call(w, r, cmd)
	if ok {
		s.writeReply(w, r, rep)
	}
}

// command is the handler of a keyed route whose request carries nothing but the caller's
// key (no path parameter; a body other than empty or {} is 400): it sends the command mk
// builds and writes its reply. With idCommand, one route line adds such an endpoint.
func (s *Server) command(mk func(machine.Req) machine.Command_) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
		if s.noBody(w, r) {
			s.do(w, r, mk(machine.Req{KeyHash: keyHash}))
		}
	}
}

// idCommand is command for a route with one id in its path, the parameter param, checked
// as every path id is (400 otherwise).
func (s *Server) idCommand(param string, mk func(rq machine.Req, id string) machine.Command_) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, keyHash string) {
		id, ok := s.pathID(w, r, ps, param)
		if ok && s.noBody(w, r) {
			s.do(w, r, mk(machine.Req{KeyHash: keyHash}, id))
		}
	}
}

// call sends a command and returns its reply; on a desk failure it has answered already.
func (s *Server) call(w http.ResponseWriter, r *http.Request, cmd machine.Command_) (machine.Reply, bool) {
	ctx, cancel := s.withTimeout(r)
	defer cancel()
	rep, err := s.desk.Do(ctx, withIdempotency(r, cmd))
	if err != nil {
		s.writeDeskFailure(w, r, err)
		return machine.Reply{}, false
	}
	return rep, true
}

// read sends a query for the caller and writes its reply.
func (s *Server) read(w http.ResponseWriter, r *http.Request, keyHash string, q machine.Query) {
	ctx, cancel := s.withTimeout(r)
	defer cancel()
	rep, err := s.desk.Read(ctx, keyHash, q)
	if err != nil {
		s.writeDeskFailure(w, r, err)
		return
	}
	s.writeReply(w, r, rep)
}

// body reads and strictly decodes a JSON object body into v; false when it has answered.
func (s *Server) body(w http.ResponseWriter, r *http.Request, v any) bool {
	b, werr := readBody(w, r, s.opts.MaxBodyBytes)
	if werr == nil {
		werr = decodeStrict(b, v)
	}
	if werr != nil {
		s.writeWire(w, r, werr)
		return false
	}
	return true
}

// noBody accepts the empty body of a bodiless POST; false when it has answered.
func (s *Server) noBody(w http.ResponseWriter, r *http.Request) bool {
	b, werr := readBody(w, r, s.opts.MaxBodyBytes)
	if werr == nil {
		werr = decodeEmpty(b)
	}
	if werr != nil {
		s.writeWire(w, r, werr)
		return false
	}
	return true
}

// pathID reads and checks a path parameter; false when it has answered.
func (s *Server) pathID(w http.ResponseWriter, r *http.Request, ps httprouter.Params, name string) (string, bool) {
	v := ps.ByName(name)
	if !validID(v) {
		s.writeWire(w, r, badRequest("path parameter %s must be 1 to %d letters, digits, '_', '-', '.' or ':'", name, maxIDLen))
		return "", false
	}
	return v, true
}

// checks returns the first refusal among errs.
func checks(errs ...*wireError) *wireError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// rateLimited applies a per-IP limit (an IPv6 source counted by its /64); true when it
// has answered 429.
func (s *Server) rateLimited(w http.ResponseWriter, r *http.Request, l *ipLimiter) bool {
	ok, wait := l.allow(limitKey(clientIP(r)))
	if ok {
		return false
	}
	s.metrics.rateLimited.Add(1)
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.writeError(w, r, http.StatusTooManyRequests, "", "too many requests from this address; retry later")
	return true
}

// ---- Queries ----

// Query constructors, so that each GET route names its query once.
var (
	qMakerStatus = func() machine.Query { return machine.QMakerStatus{} }
	qRfqIncoming = func() machine.Query { return machine.QRfqIncoming{} }
	qRfqMine     = func() machine.Query { return machine.QRfqMine{} }
	qDesk        = func() machine.Query { return machine.QDesk{} }
	qConfig      = func() machine.Query { return machine.QConfig{} }
	qInstruments = func() machine.Query { return machine.QInstruments{} }
	qTxPending   = func() machine.Query { return machine.QTxPending{} }
	qFaucetInfo  = func() machine.Query { return machine.QFaucetInfo{} }
	// The loop fills in the ledger data of these two for the caller it resolves.
	qBalances = func() machine.Query { return machine.QBalances{} }
	qIncoming = func() machine.Query { return machine.QIncoming{} }

	qMakerTrades = func(n int) machine.Query { return machine.QMakerTrades{Limit: n} }
	qRfqHistory  = func(n int) machine.Query { return machine.QRfqHistory{Limit: n} }
	qTrades      = func(n int) machine.Query { return machine.QTrades{Limit: n} }
)

// query serves a GET without parameters.
func (s *Server) query(q func() machine.Query) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
		s.read(w, r, keyHash, q())
	}
}

// limitedQuery serves a GET with the `limit` query.
func (s *Server) limitedQuery(q func(int) machine.Query) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
		n, werr := parseLimit(r)
		if werr != nil {
			s.writeWire(w, r, werr)
			return
		}
		s.read(w, r, keyHash, q(n))
	}
}

// referencePrice is GET /maker/reference-price?base=&quote=.
func (s *Server) referencePrice(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	q, werr := parseQuery(r)
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	base, _, e1 := single(q, "base")
	quote, _, e2 := single(q, "quote")
	if werr := checks(e1, e2, checkText("base", base, maxTextLen), checkText("quote", quote, maxTextLen)); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	s.read(w, r, keyHash, machine.QReferencePrice{Base: base, Quote: quote})
}

// ---- Registration and keys ----

// registerStart is POST /maker/register/start.
func (s *Server) registerStart(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	if s.rateLimited(w, r, s.limRegist) {
		return
	}
	var in struct {
		DisplayName string `json:"displayName"`
		PublicKey   b64    `json:"publicKey"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checkText("displayName", in.DisplayName, maxTextLen); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	if len(in.PublicKey) != 32 {
		s.writeWire(w, r, badRequest("publicKey must be the 32-byte raw Ed25519 public key, base64"))
		return
	}
	s.do(w, r, machine.RegisterStart{DisplayName: in.DisplayName, PublicKey: in.PublicKey})
}

// registerComplete is POST /maker/register/complete: the transport draws the API key, the
// machine stores its hash, and the cleartext key goes out once in the answer.
func (s *Server) registerComplete(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	var in struct {
		RegistrationID string `json:"registrationId"`
		Signatures     []b64  `json:"signatures"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checkID("registrationId", in.RegistrationID); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	if len(in.Signatures) == 0 || len(in.Signatures) > maxSignatures {
		s.writeWire(w, r, badRequest("signatures must hold 1 to %d signatures, one per topology hash", maxSignatures))
		return
	}
	sigs := make([][]byte, len(in.Signatures))
	for i, sig := range in.Signatures {
		if werr := checkSignature("signatures["+strconv.Itoa(i)+"]", sig); werr != nil {
			s.writeWire(w, r, werr)
			return
		}
		sigs[i] = sig
	}
	callWithSecret(s, w, r, "register complete", s.secrets.newAPIKey,
		func(hash string) machine.Command_ {
			return machine.RegisterComplete{RegistrationID: in.RegistrationID, Signatures: sigs, NewKeyHash: hash}
		},
		func(b *machine.RegisterCompleteDTO, key string) { b.APIKey = key })
}

// challenge is POST /maker/challenge: the transport draws the challenge text.
func (s *Server) challenge(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	if s.rateLimited(w, r, s.limChall) {
		return
	}
	var in struct {
		PartyID string `json:"partyId"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checkText("partyId", in.PartyID, maxPartyIDLen); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	ch, err := s.secrets.newChallenge()
	if err != nil {
		s.log.Error("challenge", "err", err)
		s.writeError(w, r, http.StatusInternalServerError, "", "internal error")
		return
	}
	s.do(w, r, machine.ChallengeRequest{PartyID: in.PartyID, Challenge: ch})
}

// rotateKey is POST /maker/api-key/rotate: a fresh key replaces the old one on success.
func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ string) {
	var in struct {
		PartyID   string `json:"partyId"`
		Challenge string `json:"challenge"`
		Signature b64    `json:"signature"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checks(
		checkText("partyId", in.PartyID, maxPartyIDLen),
		checkText("challenge", in.Challenge, maxTextLen),
		checkSignature("signature", in.Signature),
	); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	callWithSecret(s, w, r, "rotate key", s.secrets.newAPIKey,
		func(hash string) machine.Command_ {
			return machine.RotateKey{PartyID: in.PartyID, Challenge: in.Challenge, Signature: in.Signature, NewKeyHash: hash}
		},
		func(b *machine.APIKeyDTO, key string) { *b = machine.APIKeyDTO{APIKey: key} })
}

// ---- Maker ----

// submitQuote is POST /maker/quotes.
func (s *Server) submitQuote(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	var in struct {
		RfqID      string         `json:"rfqId"`
		Price      *money.Decimal `json:"price"`
		ValidUntil *wireTime      `json:"validUntil"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checkID("rfqId", in.RfqID); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	if in.Price == nil {
		s.writeWire(w, r, badRequest("price is required"))
		return
	}
	cmd := machine.SubmitQuote{Req: machine.Req{KeyHash: keyHash}, RFQID: in.RfqID, Price: *in.Price}
	if in.ValidUntil != nil {
		t := time.Time(*in.ValidUntil)
		cmd.ValidUntil = &t
	}
	s.do(w, r, cmd)
}

// deleteQuote is DELETE /maker/quotes/:id.
func (s *Server) deleteQuote(w http.ResponseWriter, r *http.Request, ps httprouter.Params, keyHash string) {
	if id, ok := s.pathID(w, r, ps, "id"); ok {
		s.do(w, r, machine.DeleteQuote{Req: machine.Req{KeyHash: keyHash}, QuoteID: id})
	}
}

// ---- Taker ----

// createRFQ is POST /rfq.
func (s *Server) createRFQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	var in struct {
		Direction     string         `json:"direction"`
		Qty           *money.Decimal `json:"qty"`
		Base          string         `json:"base"`
		Quote         string         `json:"quote"`
		InvitedMakers []string       `json:"invitedMakers"`
		TTLSeconds    *int64         `json:"ttlSeconds"`
	}
	if !s.body(w, r, &in) {
		return
	}
	werr := checks(
		checkText("direction", in.Direction, maxTextLen),
		checkText("base", in.Base, maxTextLen),
		checkText("quote", in.Quote, maxTextLen),
	)
	if werr == nil && in.Qty == nil {
		werr = badRequest("qty is required")
	}
	if werr == nil && in.TTLSeconds == nil {
		werr = badRequest("ttlSeconds is required")
	}
	if werr == nil && in.InvitedMakers == nil {
		werr = badRequest("invitedMakers is required")
	}
	for i, m := range in.InvitedMakers {
		if werr == nil {
			werr = checkText("invitedMakers["+strconv.Itoa(i)+"]", m, maxTextLen)
		}
	}
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	s.do(w, r, machine.CreateRFQ{
		Req: machine.Req{KeyHash: keyHash}, Direction: machine.Direction(in.Direction), Qty: *in.Qty,
		Base: in.Base, Quote: in.Quote, InvitedMakers: in.InvitedMakers, TTLSeconds: *in.TTLSeconds,
	})
}

// cancelRFQ is DELETE /rfq/:id.
func (s *Server) cancelRFQ(w http.ResponseWriter, r *http.Request, ps httprouter.Params, keyHash string) {
	if id, ok := s.pathID(w, r, ps, "id"); ok {
		s.do(w, r, machine.CancelRFQ{Req: machine.Req{KeyHash: keyHash}, RFQID: id})
	}
}

// declineRFQ is POST /maker/rfq/{id}/decline {reason}: the reason is required; whether it
// is one the desk knows is the desk's to say (400).
func (s *Server) declineRFQ(w http.ResponseWriter, r *http.Request, ps httprouter.Params, keyHash string) {
	id, ok := s.pathID(w, r, ps, "id")
	if !ok {
		return
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if !s.body(w, r, &in) {
		return
	}
	if werr := checkText("reason", in.Reason, maxTextLen); werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	s.do(w, r, machine.DeclineRFQ{Req: machine.Req{KeyHash: keyHash}, RFQID: id, Reason: in.Reason})
}

// ---- Wallet ----

// withdraw is POST /wallet/withdraw.
func (s *Server) withdraw(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	var in struct {
		Symbol   string         `json:"symbol"`
		Amount   *money.Decimal `json:"amount"`
		Receiver string         `json:"receiver"`
	}
	if !s.body(w, r, &in) {
		return
	}
	werr := checks(checkText("symbol", in.Symbol, maxTextLen), checkText("receiver", in.Receiver, maxPartyIDLen))
	if werr == nil && in.Amount == nil {
		werr = badRequest("amount is required")
	}
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	s.do(w, r, machine.Withdraw{Req: machine.Req{KeyHash: keyHash}, Symbol: in.Symbol, Amount: *in.Amount, Receiver: in.Receiver})
}

// ---- Sign queue ----

// signedEntry is one {actionId, signature} of POST /tx/execute.
type signedEntry struct {
	ActionID  string `json:"actionId"`
	Signature b64    `json:"signature"`
}

// execute is POST /tx/execute in its singular form {actionId, signature} or its batch form
// {signatures: [...]} (1 to machine.MaxBatch entries); exactly one form per request.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	var in struct {
		ActionID   *string        `json:"actionId"`
		Signature  b64            `json:"signature"`
		Signatures *[]signedEntry `json:"signatures"`
	}
	if !s.body(w, r, &in) {
		return
	}
	cmd := machine.ExecuteActions{Req: machine.Req{KeyHash: keyHash}}
	switch {
	case in.Signatures != nil && (in.ActionID != nil || in.Signature != nil):
		s.writeWire(w, r, badRequest("send either {actionId, signature} or {signatures: [...]}, not both"))
		return
	case in.Signatures != nil:
		entries := *in.Signatures
		if len(entries) == 0 || len(entries) > machine.MaxBatch {
			s.writeWire(w, r, badRequest("signatures must hold 1 to %d entries, got %d", machine.MaxBatch, len(entries)))
			return
		}
		cmd.Batch = true
		for i, e := range entries {
			field := "signatures[" + strconv.Itoa(i) + "]"
			if werr := checks(checkID(field+".actionId", e.ActionID), checkSignature(field+".signature", e.Signature)); werr != nil {
				s.writeWire(w, r, werr)
				return
			}
			cmd.Entries = append(cmd.Entries, machine.SignedAction{ActionID: e.ActionID, Signature: e.Signature})
		}
	default:
		id := ""
		if in.ActionID != nil {
			id = *in.ActionID
		}
		if werr := checks(checkID("actionId", id), checkSignature("signature", in.Signature)); werr != nil {
			s.writeWire(w, r, werr)
			return
		}
		cmd.Entries = []machine.SignedAction{{ActionID: id, Signature: in.Signature}}
	}
	s.do(w, r, cmd)
}

// typeName names a reply body's type for a log line.
func typeName(v any) string {
	return fmt.Sprintf("%T", v)
}
