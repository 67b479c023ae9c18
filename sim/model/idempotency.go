package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Idempotency keys (docs/api.md, "Idempotency keys"), written from the contract: a write
// with an Idempotency-Key runs once per key and scope (the caller's party; the client
// address group for the unauthenticated registration calls); a repeat with the same
// method, path and body answers the first answer again, byte for byte, marked replayed,
// and changes nothing; another method, path or body is 422 IDEMPOTENCY_KEY_REUSED; a
// repeat while the first is unanswered is 409 RETRY_LATER; a malformed key 400, after
// authentication. Records live idempotency_retention (24h by default) by input time, at
// most 10,000 per scope (the oldest evicted first); an answer that asks for a retry (5xx,
// 429, RETRY_LATER) is not recorded, nor is a request a restart ended unanswered. The model does not bound the address groups (the
// desk keeps 4,096): the simulator uses a handful of addresses.

// idemMaxPerScope is the contract's bound on the records of one scope.
const idemMaxPerScope = 10000

// IdemRec is what the model remembers of one key.
type IdemRec struct {
	Sig    string    `json:"sig"` // method, path and body hash
	At     time.Time `json:"at"`
	Seq    uint64    `json:"seq"`
	Done   bool      `json:"done"`
	Status int       `json:"status,omitempty"`
	Code   string    `json:"code,omitempty"`
	Msg    string    `json:"msg,omitempty"`
	Body   string    `json:"body,omitempty"` // the JSON of a success's body
	IsErr  bool      `json:"isErr,omitempty"`
	// Kind is the keyed command's input kind. Orphan: a restart left the request
	// unanswered while its flow carried on (a withdrawal, a deposit, a faucet draw, a
	// registration, an execute; not a quote submission or an accept, which boot undoes):
	// the desk answers it when the flow does, to nobody, which the model cannot see.
	Kind   string `json:"kind,omitempty"`
	Orphan bool   `json:"orphan,omitempty"`
	// Req is an orphan's request, so that its replayed answer can teach the model what the
	// first answer would have (a registration's id).
	Req *Request `json:"req,omitempty"`
}

// idemRetention is the retention in force.
func (m *Model) idemRetention() time.Duration {
	if m.st.Cfg.IdempotencyRetention > 0 {
		return m.st.Cfg.IdempotencyRetention
	}
	return 24 * time.Hour
}

// validIdemKey is the contract's grammar: 1 to 64 of [A-Za-z0-9_.:-].
func validIdemKey(k string) bool {
	if len(k) < 1 || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// idempotent judges a write that carried an Idempotency-Key.
func (s *step) idempotent(in machine.Idempotent) {
	m := s.m
	s.route = in.Method + " " + in.Path + " (Idempotency-Key " + in.Key + ")"
	var scope string
	switch in.Cmd.(type) {
	case nil:
		s.immediate = one(400, "")
		s.idemStill = true
		return
	case machine.RegisterComplete, machine.RotateKey:
		// The answer carries a new API key, never stored: no key is accepted (docs/api.md).
		s.immediate = one(400, "")
		s.idemStill = true
		return
	case machine.RegisterStart, machine.ChallengeRequest:
		scope = "addr:" + in.Address
	default:
		p := s.authenticate(machine.KeyHash(in.Cmd))
		if p == nil {
			s.idemStill = true
			return
		}
		scope = p.ID
		if _, ok := in.Cmd.(machine.IssueStreamTicket); ok {
			// The answer carries a stream ticket, never stored: no key is accepted, once
			// the caller is known (docs/api.md).
			s.immediate = one(400, "")
			s.idemStill = true
			return
		}
	}
	if !validIdemKey(in.Key) {
		s.immediate = one(400, "")
		s.idemStill = true
		return
	}
	if m.st.Idem == nil {
		m.st.Idem = map[string]map[string]*IdemRec{}
	}
	sig := in.Method + " " + in.Path + " " + in.BodyHash
	recs := m.st.Idem[scope]
	if r := recs[in.Key]; r != nil && r.Orphan && r.Sig == sig && s.at.Sub(r.At) < m.idemRetention() {
		if s.idemOrphan(scope, in.Key, r) {
			return
		}
		recs = m.st.Idem[scope] // the desk ran it anew: the orphan is gone
	}
	if r := recs[in.Key]; r != nil && s.at.Sub(r.At) < m.idemRetention() {
		s.idemStill = true
		switch {
		case r.Sig != sig:
			s.immediate = one(422, machine.CodeIdempotencyKeyReused)
		case !r.Done:
			s.immediate = one(409, machine.CodeRetryLater)
			s.idemRaced = true
		default:
			s.idemReplay = r
			code := ""
			if r.IsErr {
				code = r.Code
			}
			s.immediate = &expect{alts: []sc{{r.Status, code}}, body: func(rep machine.Reply) string {
				if r.Status == 204 {
					if rep.Body != nil {
						return "a replayed 204 carries a body"
					}
					return ""
				}
				b, err := json.Marshal(rep.Body)
				if err != nil || string(b) != r.Body {
					return fmt.Sprintf("the replayed body %s is not the first answer's %s", b, r.Body)
				}
				return ""
			}}
		}
		return
	}
	// A new record: the expired ones go first, then the oldest at the bound.
	if recs == nil {
		recs = map[string]*IdemRec{}
		m.st.Idem[scope] = recs
	}
	m.idemMakeRoom(scope, recs, s.at)
	m.st.Idem[scope] = recs
	recs[in.Key] = &IdemRec{Sig: sig, At: s.at, Seq: s.env.Seq, Kind: in.Cmd.Kind()}
	if m.st.IdemBySeq == nil {
		m.st.IdemBySeq = map[uint64]string{}
	}
	m.st.IdemBySeq[s.env.Seq] = scope + "\x00" + in.Key
	s.idemFresh = true
	if !s.command(in.Cmd) {
		s.failf("the model knows no command of kind %q", in.Cmd.Kind())
	}
}

// idemMakeRoom drops a scope's expired records at time at, then its oldest one if it is
// still at the bound. Neither pass depends on the map's order (no sorting: a scope holds
// up to idemMaxPerScope records and this runs on every keyed write that makes one): the
// expired ones are a set, and the oldest is the least Seq, the least key among equals.
func (m *Model) idemMakeRoom(scope string, recs map[string]*IdemRec, at time.Time) {
	retention := m.idemRetention()
	for k, r := range recs {
		if at.Sub(r.At) >= retention {
			m.idemDelete(scope, k)
		}
	}
	if len(recs) >= idemMaxPerScope {
		oldest := ""
		var oldestSeq uint64
		for k, r := range recs {
			if oldest == "" || r.Seq < oldestSeq || r.Seq == oldestSeq && k < oldest {
				oldest, oldestSeq = k, r.Seq
			}
		}
		m.idemDelete(scope, oldest)
	}
}

// idemDelete forgets a record (and its scope once empty).
func (m *Model) idemDelete(scope, key string) {
	r := m.st.Idem[scope][key]
	if r == nil {
		return
	}
	if !r.Done {
		delete(m.st.IdemBySeq, r.Seq)
	}
	delete(m.st.Idem[scope], key)
	if len(m.st.Idem[scope]) == 0 {
		delete(m.st.Idem, scope)
	}
}

// idemAfter checks the replies against the records and records first answers: a replay
// or a refusal of the key is the input's only output and is marked replayed exactly when
// it is a replay; a first answer (now or to a held request) is recorded unless 5xx.
func (s *step) idemAfter() {
	m := s.m
	if s.idemStill {
		if len(s.out.Events) != 0 || len(s.out.Calls) != 0 || len(s.out.Replies) != 1 {
			s.failf("%s changed something: %d events, %d ledger calls, %d replies (a repeat or a refused key changes nothing)",
				s.whatText(), len(s.out.Events), len(s.out.Calls), len(s.out.Replies))
			return
		}
		if rep := s.out.Replies[0]; rep.Replayed != (s.idemReplay != nil) {
			s.failf("%s answered with Idempotent-Replayed %v; the contract says %v", s.whatText(), rep.Replayed, s.idemReplay != nil)
			return
		}
		if r := s.idemReplay; r != nil {
			if rep := s.out.Replies[0]; r.IsErr && (rep.Err == nil || rep.Err.Message != r.Msg) {
				s.failf("%s replayed %s; the first answer was %d %s %q", s.whatText(), replyText(rep), r.Status, r.Code, r.Msg)
			}
		}
		return
	}
	if len(m.st.IdemBySeq) == 0 {
		return
	}
	for _, rep := range s.out.Replies {
		ref, ok := m.st.IdemBySeq[rep.Seq]
		if !ok {
			if rep.Replayed {
				s.failf("a reply to request %d is marked replayed, but it is no repeat of a key", rep.Seq)
			}
			continue
		}
		if rep.Replayed {
			s.failf("the first answer to request %d (%s) is marked replayed", rep.Seq, replyText(rep))
			return
		}
		delete(m.st.IdemBySeq, rep.Seq)
		scope, key := splitRef(ref)
		r := m.st.Idem[scope][key]
		if r == nil || r.Seq != rep.Seq {
			continue
		}
		if rep.Status >= 500 || rep.Status == 429 || rep.Err != nil && rep.Err.Code == machine.CodeRetryLater {
			// An answer that asks for a retry is not recorded: the retry runs anew.
			m.idemDelete(scope, key)
			continue
		}
		r.Done, r.Status = true, rep.Status
		if rep.Err != nil {
			r.IsErr, r.Code, r.Msg = true, rep.Err.Code, rep.Err.Message
			continue
		}
		if rep.Status != 204 {
			b, err := json.Marshal(rep.Body)
			if err != nil {
				s.failf("the answer to request %d does not encode: %v", rep.Seq, err)
				return
			}
			r.Body = string(b)
		}
	}
}

// idemBoot: a restart ends the unanswered keyed requests; their keys run anew.
func (m *Model) idemBoot() {
	undone := map[string]bool{machine.SubmitQuote{}.Kind(): true, machine.AcceptQuote{}.Kind(): true}
	for _, seq := range slices.Sorted(maps.Keys(m.st.IdemBySeq)) {
		scope, key := splitRef(m.st.IdemBySeq[seq])
		delete(m.st.IdemBySeq, seq)
		if r := m.st.Idem[scope][key]; r != nil && r.Seq == seq {
			if undone[r.Kind] {
				m.idemDelete(scope, key)
			} else {
				r.Orphan, r.Req = true, m.st.Reqs[seq]
			}
		}
	}
}

// idemOrphan judges a repeat of an orphaned key (same method, path and body), whose
// flow's answer the model could not see: the desk may still wait for the flow (409
// RETRY_LATER, nothing else), have recorded its answer (replayed, which the model then
// records: every later repeat must replay it identically), or have let the key run anew
// once the flow ended without an answer (a fresh run: the orphan is dropped and it returns
// false, for the caller to judge the write as new).
func (s *step) idemOrphan(scope, key string, r *IdemRec) bool {
	var rep *machine.Reply
	for i := range s.out.Replies {
		if s.out.Replies[i].Seq == s.env.Seq {
			rep = &s.out.Replies[i]
		}
	}
	switch {
	case rep != nil && rep.Replayed:
		r.Orphan, r.Done, r.Status = false, true, rep.Status
		if rep.Err != nil {
			r.IsErr, r.Code, r.Msg = true, rep.Err.Code, rep.Err.Message
		} else if rep.Status != 204 {
			b, err := json.Marshal(rep.Body)
			if err != nil {
				s.failf("%s replayed a body that does not encode: %v", s.whatText(), err)
				return true
			}
			r.Body = string(b)
		}
		s.idemStill, s.idemReplay = true, r
		s.immediate = &expect{alts: []sc{{rep.Status, r.Code}}}
		if req := r.Req; req != nil && req.Kind == "register.start" && rep.Err == nil {
			// The flow's answer, first heard now: judged as the late answer it is, which
			// records the registration its id names.
			var d machine.RegisterStartDTO
			if err := json.Unmarshal([]byte(r.Body), &d); err != nil {
				s.failf("%s replayed a registration that does not decode: %v", s.whatText(), err)
				return true
			}
			late := *rep
			late.Body = d
			s.lateReply(req, late)
		}
		r.Req = nil
		return true
	case rep != nil && rep.Err != nil && rep.Status == 409 && rep.Err.Code == machine.CodeRetryLater && len(s.out.Calls) == 0 && len(s.out.Events) == 0:
		s.idemStill, s.idemRaced = true, true
		s.immediate = one(409, machine.CodeRetryLater)
		return true
	}
	s.m.idemDelete(scope, key)
	return false
}

// IdemRecord reports the model's record of a key in a scope (a party id, or "addr:" and
// an address): whether it has one, and whether it is answered.
func (m *Model) IdemRecord(scope, key string) (has, done bool) {
	r := m.st.Idem[scope][key]
	if r == nil || m.st.Now.Sub(r.At) >= m.idemRetention() {
		return false, false
	}
	return true, r.Done
}

func splitRef(ref string) (scope, key string) {
	for i := 0; i < len(ref); i++ {
		if ref[i] == 0 {
			return ref[:i], ref[i+1:]
		}
	}
	return ref, ""
}
