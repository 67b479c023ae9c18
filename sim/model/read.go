package model

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// Read judges the desk's answer to a read (a machine.Read with a machine.Q* query) by the
// caller with keyHash at time at. Balances and the deposit inbox carry the ledger's
// holdings and transfers in the query: the ledger is the truth for those, and the model
// checks that the desk renders them as the contract says.
func (m *Model) Read(at time.Time, keyHash string, q machine.Query, rep machine.Reply) (err error) {
	what := fmt.Sprintf("%T", q)
	defer func() {
		if r := recover(); r != nil {
			err = &Divergence{At: at, What: what, Msg: fmt.Sprintf("the model could not judge the read (%v)", r)}
		}
	}()
	if at.Before(m.st.Now) {
		at = m.st.Now
	}
	fail := func(format string, args ...any) error {
		return &Divergence{At: at, What: what, Msg: fmt.Sprintf(format, args...)}
	}
	p := m.resolve(keyHash, rep.Status != 401)
	if p == nil {
		if rep.Status != 401 {
			return fail("a read with an unknown key answered %s; the contract says 401", replyText(rep))
		}
		return nil
	}
	what = readName(q) + " by " + p.Hint
	limit := 0
	switch x := q.(type) {
	case machine.QRfqHistory:
		limit = x.Limit
	case machine.QTrades:
		limit = x.Limit
	case machine.QMakerTrades:
		limit = x.Limit
	}
	if limit == 0 {
		limit = 100 // SPEC: default 100
	}
	if limit < 1 || limit > 500 {
		if rep.Status != 400 {
			return fail("limit %d answered %s; the contract says 400 (1 to 500)", limit, replyText(rep))
		}
		return nil
	}
	_, isRef := q.(machine.QReferencePrice)
	if _, isScore := q.(machine.QScorecard); !isRef && !isScore && rep.Status != 200 {
		return fail("answered %s; the contract says 200", replyText(rep))
	}
	var msg string
	switch x := q.(type) {
	case machine.QMakerStatus:
		msg = m.readStatus(p, at, rep.Body)
	case machine.QDesk:
		msg = m.readDesk(p, rep.Body)
	case machine.QConfig:
		msg = m.readConfig(rep.Body)
	case machine.QInstruments:
		msg = m.readInstruments(rep.Body)
	case machine.QRfqMine:
		msg = m.readMine(p, rep.Body)
	case machine.QRfqIncoming:
		msg = m.readIncoming(p, rep.Body)
	case machine.QTrades:
		msg = m.readTrades(p, limit, false, rep.Body)
	case machine.QMakerTrades:
		msg = m.readTrades(p, limit, true, rep.Body)
	case machine.QRfqHistory:
		msg = m.readHistory(p, limit, rep.Body)
	case machine.QTxPending:
		msg = m.readPending(p, at, rep.Body)
	case machine.QBalances:
		msg = m.readBalances(p, x.Holdings, rep.Body)
	case machine.QFaucetInfo:
		msg = m.readFaucetInfo(p, at, rep.Body)
	case machine.QScorecard:
		msg = m.readScorecard(p, x, rep)
	case machine.QProtection:
		msg = m.readProtection(p, at, rep.Body)
	case machine.QIncoming, machine.QReferencePrice:
		// not judged beyond authentication
	default:
		return fail("the model knows no query %T", q)
	}
	if msg != "" {
		return fail("%s", msg)
	}
	return nil
}

func readName(q machine.Query) string {
	switch x := q.(type) {
	case machine.QMakerStatus:
		return "GET /maker/status"
	case machine.QDesk:
		return "GET /desk"
	case machine.QConfig:
		return "GET /config"
	case machine.QInstruments:
		return "GET /instruments"
	case machine.QRfqMine:
		return "GET /rfq/mine"
	case machine.QRfqIncoming:
		return "GET /rfq/incoming"
	case machine.QTrades:
		return fmt.Sprintf("GET /trades?limit=%d", x.Limit)
	case machine.QMakerTrades:
		return fmt.Sprintf("GET /maker/trades?limit=%d", x.Limit)
	case machine.QRfqHistory:
		return fmt.Sprintf("GET /rfq-history?limit=%d", x.Limit)
	case machine.QTxPending:
		return "GET /tx/pending"
	case machine.QBalances:
		return "GET /balances"
	case machine.QIncoming:
		return "GET /wallet/incoming"
	case machine.QFaucetInfo:
		return "GET /faucet"
	case machine.QReferencePrice:
		return "GET /maker/reference-price"
	case machine.QScorecard:
		return "GET /maker/scorecard?window=" + x.Window
	case machine.QProtection:
		return "GET /maker/protection"
	}
	return fmt.Sprintf("%T", q)
}

// pendingOf lists the party's actions still waiting at time at.
func (m *Model) pendingOf(p *Party, at time.Time) []string {
	var out []string
	for id, x := range m.st.Actions {
		if x.Party == p.ID && x.ExpiresAt.After(at) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func (m *Model) readStatus(p *Party, at time.Time, body any) string {
	d, ok := body.(machine.MakerStatusDTO)
	if !ok {
		return "the body is not a maker status"
	}
	n := len(m.pendingOf(p, at))
	switch {
	case d.PartyID != p.ID || d.Hint != p.Hint:
		return fmt.Sprintf("partyId/hint are %s/%s, not %s/%s", d.PartyID, d.Hint, p.ID, p.Hint)
	case d.Invitable != (p.Online > 0):
		return fmt.Sprintf("invitable is %v with %d open sockets", d.Invitable, p.Online)
	case d.PendingActions != n:
		return fmt.Sprintf("pendingActions is %d, not %d (actions waiting on %s's signature)", d.PendingActions, n, p.Hint)
	case !d.ServiceActivated:
		return "serviceActivated is false for a registered party"
	}
	return ""
}

func (m *Model) readDesk(p *Party, body any) string {
	d, ok := body.(machine.DeskDTO)
	if !ok {
		return "the body is not the desk answer"
	}
	var want, listed []string
	for _, x := range m.st.Parties {
		if x.Online > 0 && x.ID != p.ID {
			want = append(want, x.Hint)
			listed = append(listed, x.ID)
		}
	}
	sort.Strings(want)
	if d.Makers == nil || !slices.Equal(d.Makers, want) && !(len(want) == 0 && len(d.Makers) == 0) {
		return fmt.Sprintf("makers are %v, not %v (every party whose stream is open, the caller excluded, sorted)", d.Makers, want)
	}
	if d.FeeBps != baseTier(m.tiers) {
		return fmt.Sprintf("feeBps is %d, not the base tier's %d", d.FeeBps, baseTier(m.tiers))
	}
	if len(d.FeeTiers) != len(m.tiers) {
		return fmt.Sprintf("%d fee tiers, not %d", len(d.FeeTiers), len(m.tiers))
	}
	for _, t := range d.FeeTiers {
		found := false
		for _, mt := range m.tiers {
			if mustFormat(mt.Min) == decStr(t.MinNotionalUSD) && mt.Bps == t.FeeBps {
				found = true
			}
		}
		if !found {
			return fmt.Sprintf("fee tier %s/%d bps is not a configured tier", decStr(t.MinNotionalUSD), t.FeeBps)
		}
	}
	return m.checkMakerStats(d.MakerStats, listed)
}

func (m *Model) readConfig(body any) string {
	d, ok := body.(machine.ConfigDTO)
	cfg := &m.st.Cfg
	if !ok {
		return "the body is not the config answer"
	}
	switch {
	case decStr(d.MinNotionalUSD) != mustFormat(m.minUSD):
		return fmt.Sprintf("minNotionalUsd is %s, not %s", decStr(d.MinNotionalUSD), mustFormat(m.minUSD))
	case d.Network != cfg.Network:
		return fmt.Sprintf("network is %s, not %s", d.Network, cfg.Network)
	case d.QuoteLifetimeSeconds != int(cfg.QuoteLifetime/time.Second) || d.MinTTLSeconds != int(cfg.MinTTL/time.Second) ||
		d.MaxTTLSeconds != int(cfg.MaxTTL/time.Second) || d.ActionLifetimeSeconds != int(cfg.ActionLifetime/time.Second) || d.MaxBatch != m.maxBatch():
		return fmt.Sprintf("lifetimes/limits %+v differ from the configuration", d)
	}
	return ""
}

func (m *Model) readInstruments(body any) string {
	d, ok := body.([]machine.InstrumentDTO)
	if !ok || len(d) != len(m.st.Cfg.Instruments) {
		return "the answer does not list the catalog"
	}
	for i, in := range m.st.Cfg.Instruments {
		if d[i].Symbol != in.Symbol || d[i].DisplaySymbol != in.Display || d[i].Decimals != in.Decimals || d[i].LogoURL != in.LogoURL {
			return fmt.Sprintf("instrument %d is %+v, not %s", i, d[i], in.Symbol)
		}
	}
	return ""
}

func (m *Model) readMine(p *Party, body any) string {
	d, ok := body.([]machine.RfqDTO)
	if !ok {
		return "the body is not a list of RfqDto"
	}
	want := map[string]*RFQ{}
	for id, r := range m.rfqsOf(p.ID) {
		if r.Taker == p.ID {
			want[id] = r
		}
	}
	if len(d) != len(want) {
		return fmt.Sprintf("%d RFQs listed, the caller has %d open or closed within 10 minutes", len(d), len(want))
	}
	for _, x := range d {
		r := want[x.RfqID]
		if r == nil {
			return fmt.Sprintf("RFQ %s listed, which is not the caller's or not readable", x.RfqID)
		}
		if msg := m.checkRfqDTO(x, r); msg != "" {
			return msg
		}
		if x.Quotes == nil {
			return fmt.Sprintf("RFQ %s lacks its quotes", x.RfqID)
		}
		if msg := m.checkDeclines(x.Declines, r); msg != "" {
			return msg
		}
		var anchored []string
		for _, qid := range r.Quotes {
			if q := m.st.Quotes[qid]; q != nil && q.Anchored {
				anchored = append(anchored, qid)
			}
		}
		if len(*x.Quotes) != len(anchored) {
			return fmt.Sprintf("RFQ %s lists %d quotes, not the %d whose allocations landed", r.ID, len(*x.Quotes), len(anchored))
		}
		for _, qd := range *x.Quotes {
			q := m.st.Quotes[qd.QuoteID]
			if q == nil || q.RFQ != r.ID || !q.Anchored {
				return fmt.Sprintf("RFQ %s lists quote %s, which is not a landed quote of it", r.ID, qd.QuoteID)
			}
			if msg := m.checkQuoteDTO(qd, q); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func (m *Model) readIncoming(p *Party, body any) string {
	d, ok := body.([]machine.IncomingRfqDTO)
	if !ok {
		return "the body is not a list of incoming RFQs"
	}
	want := map[string]*RFQ{}
	for id, r := range m.rfqsOf(p.ID) {
		if invited(r, p.ID) {
			want[id] = r
		}
	}
	if len(d) != len(want) {
		return fmt.Sprintf("%d RFQs listed, the caller is invited to %d open or closed within 10 minutes", len(d), len(want))
	}
	for _, x := range d {
		r := want[x.RfqID]
		if r == nil {
			return fmt.Sprintf("RFQ %s listed, to which the caller is not invited or which is not readable", x.RfqID)
		}
		if msg := m.checkRfqDTO(x.RfqDTO, r); msg != "" {
			return msg
		}
		if x.Quotes != nil || x.Declines != nil {
			return fmt.Sprintf("RFQ %s carries quotes or declines in the incoming list", r.ID)
		}
		q, pend := m.newestOn(r, p.ID)
		switch {
		case x.MyQuote == nil && q == nil:
		case x.MyQuote == nil && pend != nil:
			// A newer submission of the caller waits on the ledger: its quote is not
			// recorded yet, and the contract lets the list show none.
		case x.MyQuote == nil:
			return fmt.Sprintf("RFQ %s: myQuote is null, but the caller's quote is %s (%s)", r.ID, q.ID, q.Status)
		case q == nil:
			return fmt.Sprintf("RFQ %s: myQuote is %s, but the caller has no recorded quote on it", r.ID, x.MyQuote.QuoteID)
		default:
			if msg := m.checkMyQuote(*x.MyQuote, q); msg != "" {
				return "myQuote: " + msg
			}
		}
	}
	return ""
}

func (m *Model) readTrades(p *Party, limit int, asMaker bool, body any) string {
	d, ok := body.([]machine.TradeDTO)
	if !ok {
		return "the body is not a list of TradeDto"
	}
	var want []*Trade
	for i := len(p.Trades) - 1; i >= 0 && len(want) < limit; i-- {
		t := m.st.Trades[p.Trades[i]]
		if t == nil || (asMaker && t.Maker != p.ID) {
			continue
		}
		want = append(want, t)
	}
	if len(d) != len(want) {
		return fmt.Sprintf("%d trades listed, not %d (the caller's settled trades, newest first, at most %d)", len(d), len(want), limit)
	}
	for i, t := range want {
		r, q := m.rfqOfTrade(t)
		if d[i].TradeID != t.ID {
			return fmt.Sprintf("trade %d is %s, not %s (newest first)", i, d[i].TradeID, t.ID)
		}
		if r == nil || q == nil {
			continue // the RFQ was forgotten; the trade's fields were checked at settlement
		}
		if msg := m.checkTradeDTO(d[i], t, r, q); msg != "" {
			return msg
		}
	}
	return ""
}

func (m *Model) rfqOfTrade(t *Trade) (*RFQ, *Quote) {
	return m.st.RFQs[t.RFQ], m.st.Quotes[t.Quote]
}

func (m *Model) readHistory(p *Party, limit int, body any) string {
	d, ok := body.([]machine.RfqHistoryDTO)
	if !ok {
		return "the body is not a list of history rows"
	}
	var want []History
	for i := len(p.History) - 1; i >= 0 && len(want) < limit; i-- {
		want = append(want, p.History[i])
	}
	if len(d) != len(want) {
		return fmt.Sprintf("%d history rows, not %d", len(d), len(want))
	}
	for i, h := range want {
		if msg := checkHistoryDTO(d[i], h); msg != "" {
			return msg
		}
	}
	return ""
}

func (m *Model) readPending(p *Party, at time.Time, body any) string {
	xs, ok := asActions(body)
	if !ok || xs == nil {
		return "the body is not {actions: [...]}"
	}
	want := m.pendingOf(p, at)
	var got []string
	for _, x := range xs {
		got = append(got, x.ID)
		if a := m.st.Actions[x.ID]; a != nil && a.Purpose != x.Purpose {
			return fmt.Sprintf("action %s has purpose %s, not %s", x.ID, x.Purpose, a.Purpose)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		return fmt.Sprintf("pending actions are %v, not %v", got, want)
	}
	return ""
}

func (m *Model) readBalances(p *Party, hs []machine.LedgerHolding, body any) string {
	d, ok := body.(machine.BalancesDTO)
	if !ok {
		return "the body is not a balances answer"
	}
	if d.Party != p.ID {
		return fmt.Sprintf("party is %s, not %s", d.Party, p.ID)
	}
	totals := map[string]*big.Rat{}
	for _, h := range hs {
		if h.Locked {
			continue // SPEC: only free holdings
		}
		v, err := parseDec(decStr(h.Amount))
		if err != nil {
			return fmt.Sprintf("the ledger's holding %s: %v", decStr(h.Amount), err)
		}
		sym := h.Instrument
		if i, ok := m.byReg[h.Instrument]; ok {
			sym = m.st.Cfg.Instruments[i].Symbol
		}
		if totals[sym] == nil {
			totals[sym] = new(big.Rat)
		}
		totals[sym].Add(totals[sym], v)
	}
	seen := map[string]bool{}
	for _, h := range d.Holdings {
		want := totals[h.Symbol]
		if seen[h.Symbol] || want == nil || want.Sign() == 0 {
			return fmt.Sprintf("holding %s %s is listed twice or is not a free holding of %s", h.Amount, h.Symbol, p.Hint)
		}
		seen[h.Symbol] = true
		if decStr(h.Amount) != mustFormat(want) {
			return fmt.Sprintf("free %s is %s, not %s (the ledger's unlocked holdings)", h.Symbol, decStr(h.Amount), mustFormat(want))
		}
		disp := h.Symbol
		if in, ok := m.instrument(h.Symbol); ok && in.Symbol == h.Symbol {
			disp = in.Display
		}
		if h.DisplaySymbol != disp {
			return fmt.Sprintf("holding %s has displaySymbol %s, not %s", h.Symbol, h.DisplaySymbol, disp)
		}
	}
	for _, sym := range slices.Sorted(maps.Keys(totals)) { // in order: a replay names the same one
		if v := totals[sym]; v.Sign() > 0 && !seen[sym] {
			return fmt.Sprintf("free %s %s is missing", mustFormat(v), sym)
		}
	}
	return ""
}

// readFaucetInfo judges GET /faucet: enabled where a faucet runs (the test network with a
// reservoir and something offered), the caller's cooldown left in whole seconds rounded up,
// and what one draw offers in catalog order (empty when not enabled).
func (m *Model) readFaucetInfo(p *Party, at time.Time, body any) string {
	info, ok := body.(machine.FaucetInfoDTO)
	if !ok {
		return fmt.Sprintf("GET /faucet answered %T", body)
	}
	cfg := &m.st.Cfg
	offered := m.faucetOffered()
	enabled := cfg.Network == machine.Testnet && cfg.Reservoir != "" && len(offered) > 0
	if info.Enabled != enabled {
		return fmt.Sprintf("GET /faucet says enabled %t; the contract says %t", info.Enabled, enabled)
	}
	if !enabled {
		if info.RetryAfterSeconds != 0 || len(info.Drip) != 0 {
			return fmt.Sprintf("GET /faucet of a desk without a faucet says retry after %d s and offers %d tokens", info.RetryAfterSeconds, len(info.Drip))
		}
		return ""
	}
	if len(info.Drip) != len(offered) {
		return fmt.Sprintf("GET /faucet offers %d tokens; the catalog offers %d", len(info.Drip), len(offered))
	}
	for i, in := range offered {
		if d := info.Drip[i]; d.Symbol != in.Symbol || d.DisplaySymbol != in.Display || d.Amount.Cmp(in.FaucetAmount) != 0 {
			return fmt.Sprintf("GET /faucet offers %s %s (%s) at place %d; the catalog offers %s %s (%s)",
				d.Amount, d.Symbol, d.DisplaySymbol, i, in.FaucetAmount, in.Symbol, in.Display)
		}
	}
	if want := m.retryAfter(p.ID, at); info.RetryAfterSeconds != want {
		return fmt.Sprintf("GET /faucet says retry after %d s; the cooldown left is %d s (whole seconds, rounded up)", info.RetryAfterSeconds, want)
	}
	return ""
}
