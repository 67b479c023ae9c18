package machine

import (
	"slices"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/money"
	"pgregory.net/rapid"
)

// checkCoinSelection fails the test on a coin selection problem (CoinSelectionProblem).
func checkCoinSelection(t tb, d *Desk) {
	t.Helper()
	if p := d.CoinSelectionProblem(); p != "" {
		t.Fatalf("%s", p)
	}
}

// TestProperty_CoinSelection: a maker holding few holdings quotes many RFQs at once
// (each quote sends 0.5 cbtc or 30000 usdcx), with ledger answers in any order, failures,
// signatures, withdrawals, deletes, accepts, ticks, restarts and crashes (the state
// restored from its snapshot, every call in flight lost); after every step no holding is
// named by two live prepared transactions of the desk, and no party has two spending
// prepares with the ledger.
func TestProperty_CoinSelection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarnessWith(rapidTB{t}, testConfig())
		alpha := h.maker("alpha")
		amounts := rapid.SliceOfN(rapid.SampledFrom([]string{"0.5", "0.3", "0.2", "1"}), 1, 4).Draw(t, "cbtc")
		h.ledger.fund(alpha.id, "reg:cbtc", amounts...)
		h.ledger.fund(alpha.id, "reg:usdcx", rapid.SliceOfN(rapid.SampledFrom([]string{"30000", "20000", "10000"}), 1, 3).Draw(t, "usdcx")...)
		h.auto = false
		var rfqs, quotes []string
		pick := func(t *rapid.T, ids []string, label string) string {
			if len(ids) == 0 {
				t.Skip("none yet")
			}
			return ids[rapid.IntRange(0, len(ids)-1).Draw(t, label)]
		}
		t.Repeat(map[string]func(*rapid.T){
			"rfq": func(t *rapid.T) {
				dir := rapid.SampledFrom([]Direction{Buy, Sell}).Draw(t, "dir")
				seq := h.apply(CreateRFQ{Req: houseTaker.req(), Direction: dir, Qty: money.MustParse("0.5"),
					Base: "cbtc", Quote: "usdcx", InvitedMakers: []string{h.hint(alpha)}, TTLSeconds: 300})
				if r, ok := h.replies[seq]; ok && r.Err == nil {
					rfqs = append(rfqs, r.Body.(RfqDTO).RfqID)
				}
			},
			"quote": func(t *rapid.T) {
				h.apply(SubmitQuote{Req: alpha.req(), RFQID: pick(t, rfqs, "rfq"), Price: money.MustParse("60000")})
				for _, id := range sortedKeys(h.d.Quotes) {
					if !slices.Contains(quotes, id) {
						quotes = append(quotes, id)
					}
				}
			},
			"delete": func(t *rapid.T) {
				h.apply(DeleteQuote{Req: alpha.req(), QuoteID: pick(t, quotes, "quote")})
			},
			"accept": func(t *rapid.T) {
				h.apply(AcceptQuote{Req: houseTaker.req(), QuoteID: pick(t, quotes, "quote")})
			},
			"sign": func(t *rapid.T) {
				pending := h.pending(alpha)
				if len(pending) == 0 {
					t.Skip("nothing to sign")
				}
				x := pending[rapid.IntRange(0, len(pending)-1).Draw(t, "action")]
				h.sign(alpha.id, alpha.key, []SignActionDTO{x})
			},
			"withdraw": func(t *rapid.T) {
				h.apply(Withdraw{Req: alpha.req(), Symbol: rapid.SampledFrom([]string{"cbtc", "usdcx"}).Draw(t, "sym"),
					Amount: money.MustParse(rapid.SampledFrom([]string{"0.2", "10000"}).Draw(t, "amount")), Receiver: "someone::1220ff"})
			},
			"answer": func(t *rapid.T) {
				if len(h.queued) == 0 {
					t.Skip("nothing queued")
				}
				i := rapid.IntRange(0, len(h.queued)-1).Draw(t, "call")
				c := h.queued[i]
				h.queued = slices.Delete(h.queued, i, i+1)
				h.answer(c)
			},
			"answerAll": func(t *rapid.T) { h.drain() },
			"fail": func(t *rapid.T) {
				if len(h.queued) == 0 {
					t.Skip("nothing queued")
				}
				id := h.queued[rapid.IntRange(0, len(h.queued)-1).Draw(t, "call")].CommandID
				cat := rapid.SampledFrom([]string{LedgerContention, LedgerUnavailable, LedgerInactive, LedgerUnknownOutcome,
					LedgerInsufficientFunds, LedgerExpired}).Draw(t, "category")
				h.failWhere(cat, func(c LedgerCall) bool { return c.CommandID == id })
			},
			"tick": func(t *rapid.T) {
				h.advance(time.Duration(rapid.IntRange(1, 40).Draw(t, "s")) * time.Second)
			},
			"crash": func(t *rapid.T) {
				h.d = roundTrip(rapidTB{t}, h.d)
				h.queued = nil
				h.apply(Boot{})
			},
			"": func(t *rapid.T) { checkCoinSelection(rapidTB{t}, h.d) },
		})
	})
}

// TestReservationFreedOnEveryEnding: the input holdings of a maker's quote stay reserved
// while its action lives and are free again after each way it ends.
func TestReservationFreedOnEveryEnding(t *testing.T) {
	type setup struct {
		h     *harness
		alpha actor
		quote string
	}
	start := func(t *testing.T) setup {
		h := newHarness(t)
		alpha := h.maker("alpha")
		h.ledger.fund(alpha.id, "reg:cbtc", "0.5")
		r := h.newRFQ(houseTaker, Buy, "0.5", 120, alpha)
		q := h.ok(h.apply(SubmitQuote{Req: alpha.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}), 200).(QuoteWithActionsDTO)
		if got := h.d.reservedOf(alpha.id); len(got) != 1 {
			t.Fatalf("reserved after the quote: %v", got)
		}
		return setup{h, alpha, q.QuoteID}
	}
	endings := map[string]func(t *testing.T, s setup){
		"executed": func(t *testing.T, s setup) {
			s.h.sign(s.alpha.id, s.alpha.key, s.h.pending(s.alpha))
		},
		"execute failed (input spent)": func(t *testing.T, s setup) {
			s.h.ledger.failNext(LedgerInactive, func(c LedgerCall) bool { return c.Op == OpExecute })
			s.h.sign(s.alpha.id, s.alpha.key, s.h.pending(s.alpha)[:1])
		},
		"expired": func(t *testing.T, s setup) { s.h.advance(31 * time.Second) },
		"withdrawn": func(t *testing.T, s setup) {
			s.h.apply(DeleteQuote{Req: s.alpha.req(), QuoteID: s.quote})
		},
		"cancelled with its RFQ": func(t *testing.T, s setup) {
			s.h.apply(CancelRFQ{Req: houseTaker.req(), RFQID: s.h.d.Quotes[s.quote].RFQ})
		},
		"crash recovery of a quote still funding": func(t *testing.T, s setup) {
			// A second quote whose send prepare is answered and whose receive prepare is
			// lost in a crash: the restart undoes it, and its holding is free again.
			s.h.ledger.fund(s.alpha.id, "reg:cbtc", "0.5")
			r := s.h.newRFQ(houseTaker, Buy, "0.5", 120, s.alpha)
			s.h.auto = false
			s.h.apply(SubmitQuote{Req: s.alpha.req(), RFQID: r.RfqID, Price: money.MustParse("60000")})
			for i, c := range s.h.queued {
				if spends(&c) {
					s.h.queued = slices.Delete(s.h.queued, i, i+1)
					s.h.answer(c)
					break
				}
			}
			if got := s.h.d.reservedOf(s.alpha.id); len(got) != 2 {
				t.Fatalf("reserved while the second quote funds: %v", got)
			}
			s.h.d = roundTrip(t, s.h.d)
			s.h.queued = nil
			s.h.auto = true
			s.h.apply(Boot{})
			if got := s.h.d.reservedOf(s.alpha.id); len(got) != 1 {
				t.Fatalf("reserved after the restart: %v, want the first quote's alone", got)
			}
			s.h.apply(DeleteQuote{Req: s.alpha.req(), QuoteID: s.quote})
		},
	}
	for name, end := range endings {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			s.h.d = roundTrip(t, s.h.d) // the reservation survives a restart
			if got := s.h.d.reservedOf(s.alpha.id); len(got) != 1 {
				t.Fatalf("reserved after a restart: %v", got)
			}
			end(t, s)
			if got := s.h.d.reservedOf(s.alpha.id); len(got) != 0 {
				t.Fatalf("still reserved after the quote ended: %v", got)
			}
			checkCoinSelection(t, s.h.d)
		})
	}
}

// TestSpendingPreparesOneAtATime: a maker's second quote sends its spending prepare only
// once the first's answer is applied, with the first's inputs reserved, so the two never
// name one holding; without the wait both would go out with nothing reserved and name the
// same one. The wait survives a crash: the restored desk issues the first again (its
// reservation recomputed) and keeps the second waiting.
func TestSpendingPreparesOneAtATime(t *testing.T) {
	h := newHarness(t)
	alpha := h.maker("alpha")
	cids := h.ledger.fund(alpha.id, "reg:cbtc", "0.5", "0.5")
	r1 := h.newRFQ(houseTaker, Buy, "0.5", 120, alpha)
	r2 := h.newRFQ(houseTaker, Buy, "0.5", 120, alpha)
	h.auto = false
	h.apply(SubmitQuote{Req: alpha.req(), RFQID: r1.RfqID, Price: money.MustParse("60000")})
	h.apply(SubmitQuote{Req: alpha.req(), RFQID: r2.RfqID, Price: money.MustParse("60000")})
	spending := func() []LedgerCall {
		var out []LedgerCall
		for _, c := range h.queued {
			if spends(&c) {
				out = append(out, c)
			}
		}
		return out
	}
	if s := spending(); len(s) != 1 || len(s[0].Reserved) != 0 {
		t.Fatalf("spending prepares sent: %+v, want the first alone, nothing reserved", s)
	}
	// A crash with the first in flight and the second waiting.
	h.d = roundTrip(t, h.d)
	h.queued = nil
	h.apply(Boot{})
	first := spending()
	if len(first) != 1 {
		t.Fatalf("after the restart %d spending prepares went out, want 1", len(first))
	}
	// The restart undid both quotes (their requests are gone); the calls still run.
	h.queued = slices.DeleteFunc(h.queued, func(c LedgerCall) bool { return c.CommandID == first[0].CommandID })
	h.answer(first[0])
	second := spending()
	if len(second) != 1 || second[0].CommandID == first[0].CommandID {
		t.Fatalf("after the first answer: %+v", second)
	}
	_ = cids

	// Live: two quotes of a maker with two holdings, answered in order, name one each.
	h2 := newHarness(t)
	beta := h2.maker("beta")
	h2.ledger.fund(beta.id, "reg:cbtc", "0.5", "0.5")
	var inputs [][]string
	for range 2 {
		r := h2.newRFQ(houseTaker, Buy, "0.5", 120, beta)
		q := h2.ok(h2.apply(SubmitQuote{Req: beta.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}), 200).(QuoteWithActionsDTO)
		inputs = append(inputs, h2.d.Actions[q.Actions[0].ID].Inputs)
	}
	if len(inputs[0]) != 1 || len(inputs[1]) != 1 || inputs[0][0] == inputs[1][0] {
		t.Fatalf("two quotes name %v and %v", inputs[0], inputs[1])
	}
	// A third finds nothing unreserved: 409 INSUFFICIENT_FUNDS.
	r := h2.newRFQ(houseTaker, Buy, "0.5", 120, beta)
	h2.refused(h2.apply(SubmitQuote{Req: beta.req(), RFQID: r.RfqID, Price: money.MustParse("60000")}), 409, CodeInsufficientFunds)
	checkCoinSelection(t, h2.d)
}

// TestLedgerResultRecordVersions: ledger.result carries its input holdings since record
// version 7; a version 6 record (version 7 without them) decodes with none, and one with
// inputs round-trips.
func TestLedgerResultRecordVersions(t *testing.T) {
	in := LedgerResult{CommandID: "q:maker-base:1", PreparedID: "prep-1", Hash: []byte{1, 2}, ExpiresAt: t0, Inputs: []string{"00a", "00b"}}
	_, got, err := ledgerResultRoundTrip(t, in)
	if err != nil || !slices.Equal(got.Inputs, in.Inputs) {
		t.Fatalf("version 7 ledger.result: %+v, %v", got, err)
	}
	got, err = ledgerResultAsV6(t, in)
	if err != nil || got.Inputs != nil || got.PreparedID != "prep-1" {
		t.Fatalf("version 6 ledger.result: %+v, %v", got, err)
	}
}
