package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Answers the contract allows for a request whose outcome the ledger decided: the
// ledger's refusals map to 409 (contention, or the stable codes), 404 (gone), 410 (expired),
// 502 (rejected), 503 (unavailable); which one the model cannot know.
var ledgerOutcomes = []sc{
	{409, ""}, {409, machine.CodeInsufficientFunds}, {409, machine.CodeRetryLater},
	{404, ""}, {410, ""}, {502, ""}, {503, ""}, {503, machine.CodeRetryLater},
}

func allowed(rep machine.Reply, alts []sc) bool {
	got := sc{status: rep.Status}
	if rep.Err != nil {
		got.code = rep.Err.Code
	}
	for _, a := range alts {
		if a == got {
			return true
		}
	}
	return false
}

// refused reports whether rep refused the request (an error or a status of 300 or more);
// a refusal must be one of outcomes or also, or the model fails naming what.
func (s *step) refused(what string, rep machine.Reply, outcomes []sc, also ...sc) bool {
	if rep.Err == nil && rep.Status < 300 {
		return false
	}
	if !allowed(rep, also) && !allowed(rep, outcomes) {
		s.failf("%s is %s", what, replyText(rep))
	}
	return true
}

// lateReply judges the answer to a request that waited.
func (s *step) lateReply(req *Request, rep machine.Reply) {
	m := s.m
	what := fmt.Sprintf("the answer to %s (request %d by %s)", req.Kind, req.Seq, m.hintOf(req.Party))
	switch req.Kind {
	case "register.start":
		if s.refused(what, rep, ledgerOutcomes, sc{400, ""}) {
			return
		}
		d, ok := rep.Body.(machine.RegisterStartDTO)
		if !ok || rep.Status != 200 {
			s.failf("%s is %d without a registration body", what, rep.Status)
			return
		}
		hint, fp, _ := strings.Cut(d.PartyID, "::")
		switch {
		case !strings.HasPrefix(d.RegistrationID, "reg_"):
			s.failf("%s: registrationId %q lacks the reg_ prefix", what, d.RegistrationID)
		case fp != fingerprint(req.PublicKey):
			s.failf("%s: partyId %s does not end in the key's fingerprint %s", what, d.PartyID, fingerprint(req.PublicKey))
		case !strings.HasPrefix(hint, req.Hint+"-") || len(hint) != len(req.Hint)+7:
			s.failf("%s: the hint %q is not the display name's stem %q with a 6-character suffix", what, hint, req.Hint)
		case len(d.Topology) == 0:
			s.failf("%s: no topology to sign", what)
		}
		m.st.Regs[d.RegistrationID] = &Registration{PartyID: d.PartyID, Hint: hint, PublicKey: req.PublicKey, Expires: req.At.Add(m.st.Cfg.RegistrationLifetime)}
	case "register.complete":
		if s.refused(what, rep, ledgerOutcomes, sc{400, ""}, sc{401, ""}) {
			return
		}
		reg := m.st.Regs[req.Registration]
		d, ok := rep.Body.(machine.RegisterCompleteDTO)
		if !ok || rep.Status != 200 || reg == nil {
			s.failf("%s is %d without a registration it completes", what, rep.Status)
			return
		}
		if d.PartyID != reg.PartyID || d.Hint != reg.Hint || d.Actions == nil || len(d.Actions) != 0 {
			s.failf("%s: party %s hint %s actions %d, not party %s hint %s with empty actions", what, d.PartyID, d.Hint, len(d.Actions), reg.PartyID, reg.Hint)
			return
		}
		reg.Completed = true
		p := &Party{ID: reg.PartyID, Hint: reg.Hint, PublicKey: reg.PublicKey, Keys: map[string]bool{req.NewKeyHash: true}}
		m.st.Parties[p.ID] = p
		m.st.Hints[p.Hint] = p.ID
		m.st.Keys[req.NewKeyHash] = p.ID
	case "quote.submit", "quote.submit.replaced":
		if s.refused(what, rep, ledgerOutcomes) {
			return
		}
		if req.Kind == "quote.submit.replaced" {
			s.failf("%s is %d: it was withdrawn before it was recorded (a newer quote of the same maker on RFQ %s, a decline, a mass cancel or cancel-on-disconnect), so its POST is refused", what, rep.Status, req.RFQ)
			return
		}
		s.quoteRecorded(req, rep)
	case "quote.submit.frozen":
		s.frozenSubmissionAnswer(what, rep)
	case "quote.accept":
		if r := m.st.RFQs[req.RFQ]; r != nil && r.Accepting == req.Seq {
			r.Accepting = 0
		}
		if s.refused(what, rep, ledgerOutcomes) {
			put(&s.undone, req.RFQ, true)
			return
		}
		s.tradeAccepted(req, rep)
	case "withdraw":
		delete(m.st.Withdraws, req.Party+"|"+req.Symbol)
		if s.refused(what, rep, ledgerOutcomes, sc{400, ""}, sc{501, ""}) {
			return
		}
		s.actionsAnswer(what, req, rep, "transfer-out", 1)
	case "incoming.accept":
		if s.refused(what, rep, ledgerOutcomes, sc{400, ""}) {
			return
		}
		s.actionsAnswer(what, req, rep, "transfer-accept", 1)
	case "faucet.draw":
		if s.refused(what, rep, []sc{{501, ""}, {502, ""}, {503, ""}, {503, machine.CodeRetryLater}}) {
			return
		}
		ans, ok := rep.Body.(machine.FaucetAnswer)
		if !ok || rep.Status != 200 {
			s.failf("%s is %d without a draw answer", what, rep.Status)
			return
		}
		if msg := m.checkDrawAnswer(ans, req.Party, s.at); msg != "" {
			s.failf("%s: %s", what, msg)
		}
	case "tx.execute":
		s.executeAnswer(what, req, rep)
	default:
		s.failf("%s: the model has no rule for it", what)
	}
}

// actionsAnswer checks a wallet call's {actions}: 202 with the caller's actions of the
// purpose, 200 with none for a party the desk signs for (SPEC: 202 when the effect waits
// on the caller's signature, 200 when it does not).
func (s *step) actionsAnswer(what string, req *Request, rep machine.Reply, purpose string, n int) {
	xs, ok := asActions(rep.Body)
	if !ok {
		s.failf("%s is %d without an {actions} body", what, rep.Status)
		return
	}
	p := s.m.party(req.Party)
	if p != nil && p.DeskSigned {
		n = 0
	}
	want := 202
	if len(xs) == 0 {
		want = 200
	}
	if rep.Status != want {
		s.failf("%s is %d with %d actions; the contract says %d", what, rep.Status, len(xs), want)
		return
	}
	if len(xs) > n {
		s.failf("%s holds %d actions, at most %d are due", what, len(xs), n)
		return
	}
	for _, x := range xs {
		if msg := s.checkActionDTO(x, req.Party, purpose, ""); msg != "" {
			s.failf("%s: %s", what, msg)
			return
		}
		s.noteAction(x, req.Party)
		if purpose == "transfer-out" {
			s.m.st.Actions[x.ID].Symbol = req.Symbol
		}
	}
}

// checkActionDTO checks a sign action's fields the contract fixes.
func (s *step) checkActionDTO(x machine.SignActionDTO, party, purpose, tradeID string) string {
	cfg := &s.m.st.Cfg
	switch {
	case !strings.HasPrefix(x.ID, "act_"):
		return fmt.Sprintf("action id %q lacks the act_ prefix", x.ID)
	case x.Kind != "hash":
		return fmt.Sprintf("action %s has kind %q, not hash", x.ID, x.Kind)
	case purpose != "" && x.Purpose != purpose:
		return fmt.Sprintf("action %s has purpose %q, not %s", x.ID, x.Purpose, purpose)
	case x.Purpose != "allocate" && x.Purpose != "transfer-accept" && x.Purpose != "transfer-out":
		return fmt.Sprintf("action %s has purpose %q", x.ID, x.Purpose)
	case len(x.Hash) == 0:
		return fmt.Sprintf("action %s has no hash", x.ID)
	case tradeID != "" && x.TradeID != tradeID:
		return fmt.Sprintf("action %s names trade %q, not %s", x.ID, x.TradeID, tradeID)
	case time.Time(x.ExpiresAt).After(time.Time(x.CreatedAt).Add(cfg.ActionLifetime)):
		return fmt.Sprintf("action %s expires at %s, more than the action lifetime after its creation %s", x.ID, wireTime(time.Time(x.ExpiresAt)), wireTime(time.Time(x.CreatedAt)))
	}
	if p := s.m.party(party); p != nil && p.DeskSigned {
		return fmt.Sprintf("action %s handed to %s, a party the desk signs for", x.ID, p.Hint)
	}
	return ""
}

// noteAction records an action waiting on a party's signature.
func (s *step) noteAction(x machine.SignActionDTO, party string) {
	if a, ok := s.m.st.Actions[x.ID]; ok {
		if a.Party != party {
			s.failf("action %s handed to %s belongs to %s", x.ID, s.m.hintOf(party), s.m.hintOf(a.Party))
		}
		return
	}
	s.m.st.Actions[x.ID] = &Action{ID: x.ID, Party: party, Purpose: x.Purpose, Hash: append([]byte(nil), x.Hash...), TradeID: x.TradeID, ExpiresAt: time.Time(x.ExpiresAt)}
	s.m.watch(time.Time(x.ExpiresAt), dueAction, x.ID)
}

func (s *step) executeAnswer(what string, req *Request, rep machine.Reply) {
	m := s.m
	if !req.Batch {
		if rep.Err != nil || rep.Status != 200 {
			if !allowed(rep, append([]sc{{400, ""}}, ledgerOutcomes...)) {
				s.failf("%s is %s", what, replyText(rep))
				return
			}
			// 503 is an outcome the ledger has not told (or a busy ledger: the model cannot
			// tell which), 409 RETRY_LATER an execute already out: it may still be executing.
			// Any other refusal is definite.
			code := ""
			if rep.Err != nil {
				code = rep.Err.Code
			}
			if req.Mine[0] && rep.Status != 503 && !(rep.Status == 409 && code == machine.CodeRetryLater) {
				s.notExecuting(req.Entries[0])
			}
			return
		}
		if ok, _ := rep.Body.(machine.OKDTO); !ok.OK {
			s.failf("%s is 200 without {ok: true}", what)
			return
		}
		if !req.Mine[0] {
			s.failf("%s is {ok: true} for action %s, which was not a pending action of %s", what, req.Entries[0], m.hintOf(req.Party))
			return
		}
		if x := m.st.Actions[req.Entries[0]]; x != nil {
			x.Executed = true
		}
		return
	}
	if rep.Status != 200 {
		// SPEC, Errors rule 3: a batch answers 200 even if entries fail.
		if !allowed(rep, []sc{{400, ""}, {503, ""}, {503, machine.CodeRetryLater}}) {
			s.failf("%s is %s; a batch answers 200 with one result per entry", what, replyText(rep))
		}
		return
	}
	b, ok := rep.Body.(machine.ExecBatchDTO)
	if !ok || len(b.Results) != len(req.Entries) {
		s.failf("%s does not hold one result per entry (%d entries)", what, len(req.Entries))
		return
	}
	seen := map[string]bool{}
	for i, r := range b.Results {
		// An entry refused for good (not retryable) tells its action is not executing; a
		// repeat of an id in the batch is refused on its own and tells nothing.
		if r.ActionID == req.Entries[i] && r.Status == "error" && r.Retryable != nil && !*r.Retryable && req.Mine[i] && !seen[r.ActionID] {
			s.notExecuting(r.ActionID)
		}
		if r.ActionID != req.Entries[i] {
			s.failf("%s: result %d names action %s, not %s", what, i, r.ActionID, req.Entries[i])
			return
		}
		x := m.st.Actions[r.ActionID]
		mine := req.Mine[i]
		switch r.Status {
		case "executed", "in-flight":
			if !mine || seen[r.ActionID] {
				s.failf("%s: action %s is %s, but it was not a pending action of %s", what, r.ActionID, r.Status, m.hintOf(req.Party))
				return
			}
			if x != nil {
				x.Executed = true
			}
		case "error":
			if r.Error == "" || r.Retryable == nil {
				s.failf("%s: failed entry %s lacks its error text or retryable flag", what, r.ActionID)
				return
			}
			if !mine && *r.Retryable {
				s.failf("%s: entry %s names no pending action of %s but is marked retryable", what, r.ActionID, m.hintOf(req.Party))
				return
			}
		default:
			s.failf("%s: entry %s has status %q", what, r.ActionID, r.Status)
			return
		}
		seen[r.ActionID] = true
	}
}

// notExecuting records a definite answer to an execute of the action: it is not with the
// ledger any more. If its expiry passed while it executed (its Tick was not judged), the desk
// expires it at once (machine.backToPending), so the next Tick judges it again.
func (s *step) notExecuting(id string) {
	x := s.m.st.Actions[id]
	if x == nil || !x.Executing {
		return
	}
	x.Executing = false
	if !x.ExpiresAt.After(s.at) {
		s.m.watch(x.ExpiresAt, dueAction, x.ID)
	}
}
