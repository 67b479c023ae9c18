package machine

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// Desk snapshots.
//
// A snapshot is the binary encoding of the whole Desk: the magic "RFQDDESK", a uvarint
// format version (snapshotVersion), then every field in declaration order with the
// primitives of bincodec.go. The configuration is embedded as its JSON (it is small and
// read once); maps are written as their entry count followed by the entries in ascending
// key order, so the bytes are a function of the state alone and Digest can hash them.
// Restore reads this format and, for snapshots written before it, the JSON of the Desk.

// snapshotMagic starts every binary snapshot; a JSON snapshot starts with '{'.
const snapshotMagic = "RFQDDESK"

// snapshotVersion is the version of the binary snapshot format written by this desk.
const snapshotVersion = 1

// EncodeSnapshot renders the desk's whole state in the binary snapshot format. Its
// SHA-256 is the desk's Digest.
func (d *Desk) EncodeSnapshot() ([]byte, error) {
	e := &encoder{b: make([]byte, 0, d.sizeHint())}
	if err := d.encodeSnapshot(e); err != nil {
		return nil, err
	}
	return e.b, nil
}

// sizeHint estimates the size of the desk's binary snapshot, so that encoding it rarely
// grows its buffer.
func (d *Desk) sizeHint() int {
	return 1<<16 + 1024*(len(d.Quotes)+len(d.Trades)+len(d.Actions)+len(d.Pending)) +
		256*(len(d.RFQs)+len(d.Parties)+len(d.Registrations)) + 96*(len(d.DoneActions)+len(d.Deadlines.Items))
}

// encodeSnapshot writes the snapshot through e (whose buffer may be flushed to a hash as
// it goes).
func (d *Desk) encodeSnapshot(e *encoder) error {
	e.b = append(e.b, snapshotMagic...)
	e.uvarint(snapshotVersion)
	cfg, err := json.Marshal(d.Cfg)
	if err != nil {
		return fmt.Errorf("encode desk configuration: %w", err)
	}
	e.bytes(cfg)
	e.uvarint(d.IDs.Seed)
	e.uvarint(d.IDs.Counter)
	e.time(d.Now)

	writeMap(e, d.Parties, func(e *encoder, p *Party) { e.party(p) })
	writeMap(e, d.HintIndex, (*encoder).str)
	writeMap(e, d.KeyIndex, (*encoder).str)
	writeMap(e, d.Registrations, func(e *encoder, r *Registration) { e.registration(r) })
	writeMap(e, d.Challenges, func(e *encoder, c *Challenge) { e.str(c.Text); e.str(c.PartyID); e.time(c.ExpiresAt) })
	writeMap(e, d.Sockets, func(e *encoder, s *Socket) { e.uvarint(s.ID); e.str(s.PartyID); e.str(s.KeyHash) })
	writeMap(e, d.RFQs, func(e *encoder, r *RFQ) { e.rfq(r) })
	writeMap(e, d.Quotes, func(e *encoder, q *Quote) { e.quote(q) })
	writeMap(e, d.Trades, func(e *encoder, t *Trade) { e.trade(t) })
	writeMap(e, d.Actions, func(e *encoder, x *Action) { e.action(x) })
	writeMap(e, d.DoneActions, func(e *encoder, x *DoneAction) {
		e.str(x.ID)
		e.str(x.Party)
		e.str(string(x.Outcome))
		e.time(x.Until)
	})
	writeMap(e, d.Deposits, (*encoder).str)
	writeMap(e, d.Withdrawals, (*encoder).str)
	writeMap(e, d.FaucetNext, (*encoder).time)
	writeMap(e, d.Pending, func(e *encoder, c *Continuation) { e.continuation(c) })
	writeMap(e, d.Held, func(e *encoder, h *HeldReply) { e.heldReply(h) })

	e.length(len(d.Deadlines.Items), d.Deadlines.Items == nil)
	for _, dl := range d.Deadlines.Items {
		e.time(dl.At)
		e.uvarint(dl.Order)
		e.str(string(dl.Kind))
		e.str(dl.ID)
		e.uvarint(dl.Seq)
		e.flushSome() // the queue holds every pending deadline: hand it over in pieces
	}
	e.uvarint(d.Deadlines.Next)
	e.strs(d.FailedTrades)
	if e.err != nil {
		return fmt.Errorf("encode desk state: %w", e.err)
	}
	return nil
}

// Digest is the SHA-256 of the desk's binary snapshot (EncodeSnapshot), a function of the
// state alone, so two desks that applied the same inputs have the same digest.
func (d *Desk) Digest() ([32]byte, error) {
	h := sha256.New()
	if err := d.WriteSnapshot(h); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// WriteSnapshot writes the desk's binary snapshot (the bytes of EncodeSnapshot) to w as it
// encodes it, in pieces of about 64 KiB, so that a consumer such as a hash on another
// goroutine works on one piece while the next is encoded. The state is read only while
// WriteSnapshot runs; w must not keep a piece after its Write returns.
func (d *Desk) WriteSnapshot(w io.Writer) error {
	e := &encoder{b: make([]byte, 0, 2*flushAt), w: w}
	if err := d.encodeSnapshot(e); err != nil {
		return err
	}
	if _, err := w.Write(e.b); err != nil {
		return fmt.Errorf("encode desk state: %w", err)
	}
	return nil
}

// LegacyDigest is the digest desks wrote into checkpoints of version-1 journal records:
// the SHA-256 of the state's JSON (encoding/json sorts map keys).
func (d *Desk) LegacyDigest() ([32]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return [32]byte{}, fmt.Errorf("encode desk state: %w", err)
	}
	return sha256.Sum256(b), nil
}

// VerifyCheckpoint reports whether the desk's digest, computed by the scheme the
// checkpoint names, is the one the checkpoint carries.
func (d *Desk) VerifyCheckpoint(cp Checkpoint) (bool, error) {
	var sum [32]byte
	var err error
	switch cp.Scheme {
	case "":
		sum, err = d.Digest()
	case DigestJSON:
		sum, err = d.LegacyDigest()
	default:
		return false, fmt.Errorf("checkpoint digest scheme %q is not one this desk knows", cp.Scheme)
	}
	if err != nil {
		return false, err
	}
	return fmt.Sprintf("%x", sum) == cp.Digest, nil
}

// Restore rebuilds a desk from a snapshot: the binary format of EncodeSnapshot, or the JSON
// of a Desk that snapshots held before it.
func Restore(b []byte) (*Desk, error) {
	var d *Desk
	if bytes.HasPrefix(b, []byte(snapshotMagic)) {
		var err error
		if d, err = decodeSnapshot(b); err != nil {
			return nil, fmt.Errorf("decode desk snapshot: %w", err)
		}
	} else {
		d = &Desk{}
		if err := json.Unmarshal(b, d); err != nil {
			return nil, fmt.Errorf("decode desk snapshot: %w", err)
		}
	}
	if err := d.Cfg.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot configuration: %w", err)
	}
	return d, nil
}

func decodeSnapshot(b []byte) (*Desk, error) {
	dec := &decoder{b: b, off: len(snapshotMagic), text: string(b)}
	if v := dec.uvarint(); dec.err == nil && v != snapshotVersion {
		return nil, fmt.Errorf("binary snapshot version %d is not one this desk reads (%d)", v, snapshotVersion)
	}
	d := &Desk{}
	if cfg := dec.bytes(); dec.err == nil {
		if err := json.Unmarshal(cfg, &d.Cfg); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
	}
	d.IDs.Seed = dec.uvarint()
	d.IDs.Counter = dec.uvarint()
	d.Now = dec.time()

	d.Parties = readMap(dec, (*decoder).str, func(dec *decoder) *Party { return dec.party() })
	d.HintIndex = readMap(dec, (*decoder).str, (*decoder).str)
	d.KeyIndex = readMap(dec, (*decoder).str, (*decoder).str)
	d.Registrations = readMap(dec, (*decoder).str, func(dec *decoder) *Registration { return dec.registration() })
	d.Challenges = readMap(dec, (*decoder).str, func(dec *decoder) *Challenge {
		return &Challenge{Text: dec.str(), PartyID: dec.str(), ExpiresAt: dec.time()}
	})
	d.Sockets = readMap(dec, (*decoder).uvarint, func(dec *decoder) *Socket {
		return &Socket{ID: dec.uvarint(), PartyID: dec.str(), KeyHash: dec.str()}
	})
	d.RFQs = readMap(dec, (*decoder).str, func(dec *decoder) *RFQ { return dec.rfq() })
	d.Quotes = readMap(dec, (*decoder).str, func(dec *decoder) *Quote { return dec.quote() })
	d.Trades = readMap(dec, (*decoder).str, func(dec *decoder) *Trade { return dec.trade() })
	d.Actions = readMap(dec, (*decoder).str, func(dec *decoder) *Action { return dec.action() })
	d.DoneActions = readMap(dec, (*decoder).str, func(dec *decoder) *DoneAction {
		return &DoneAction{ID: dec.str(), Party: dec.str(), Outcome: State(dec.str()), Until: dec.time()}
	})
	d.Deposits = readMap(dec, (*decoder).str, (*decoder).str)
	d.Withdrawals = readMap(dec, (*decoder).str, (*decoder).str)
	d.FaucetNext = readMap(dec, (*decoder).str, (*decoder).time)
	d.Pending = readMap(dec, (*decoder).str, func(dec *decoder) *Continuation { return dec.continuation() })
	d.Held = readMap(dec, (*decoder).uvarint, func(dec *decoder) *HeldReply { return dec.heldReply() })

	if n, isNil := dec.length(); !isNil {
		d.Deadlines.Items = make([]Deadline, n)
		for i := range d.Deadlines.Items {
			dl := &d.Deadlines.Items[i]
			dl.At = dec.time()
			dl.Order = dec.uvarint()
			dl.Kind = DeadlineKind(dec.str())
			dl.ID = dec.str()
			dl.Seq = dec.uvarint()
		}
	}
	d.Deadlines.Next = dec.uvarint()
	d.FailedTrades = dec.strs()
	if dec.err != nil {
		return nil, dec.err
	}
	if dec.off != len(b) {
		return nil, fmt.Errorf("%d bytes after the desk state", len(b)-dec.off)
	}
	return d, nil
}

// writeMap writes a map's entries in ascending key order; a nil pointer value is written
// as absent.
func writeMap[K string | uint64, V any](e *encoder, m map[K]V, val func(*encoder, V)) {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		switch k := any(&k).(type) {
		case *string:
			e.str(*k)
		case *uint64:
			e.uvarint(*k)
		}
		v := m[k]
		if isNilPtr(v) {
			e.present(false)
		} else {
			e.present(true)
			val(e, v)
		}
		e.flushSome()
	}
}

// isNilPtr reports whether v is a nil pointer of one of the desk's entity types.
func isNilPtr(v any) bool {
	switch p := v.(type) {
	case *Party:
		return p == nil
	case *Registration:
		return p == nil
	case *Challenge:
		return p == nil
	case *Socket:
		return p == nil
	case *RFQ:
		return p == nil
	case *Quote:
		return p == nil
	case *Trade:
		return p == nil
	case *Action:
		return p == nil
	case *DoneAction:
		return p == nil
	case *Continuation:
		return p == nil
	case *HeldReply:
		return p == nil
	}
	return false
}

// readMap reads a map written by writeMap; it always returns a non-nil map.
func readMap[K comparable, V any](dec *decoder, key func(*decoder) K, val func(*decoder) V) map[K]V {
	n := dec.count()
	m := make(map[K]V, n)
	for i := 0; i < n && dec.err == nil; i++ {
		k := key(dec)
		var v V
		if dec.present() {
			v = val(dec)
		}
		m[k] = v
	}
	return m
}

// ---- Entities ----

func (e *encoder) party(p *Party) {
	e.str(p.ID)
	e.str(p.Hint)
	e.str(p.DisplayName)
	e.bytes(p.PublicKey)
	e.str(p.KeyHash)
	e.str(string(p.House))
	e.int(p.Online)
	e.time(p.RegisteredAt)
	e.strs(p.Trades)
	e.length(len(p.History), p.History == nil)
	for i := range p.History {
		h := &p.History[i]
		e.str(h.ID)
		e.str(h.RFQ)
		e.str(string(h.Direction))
		e.dec(h.Qty)
		e.str(h.Base)
		e.str(h.Quote)
		e.str(h.Kind)
		e.int(h.QuoteCount)
		e.dec(h.BestPrice)
		e.bool(h.HasBest)
		e.str(h.Maker)
		e.str(h.Reason)
		e.time(h.At)
	}
}

func (d *decoder) party() *Party {
	p := &Party{ID: d.str(), Hint: d.str(), DisplayName: d.str(), PublicKey: d.bytes(), KeyHash: d.str(),
		House: HouseRole(d.str()), Online: d.int(), RegisteredAt: d.time(), Trades: d.strs()}
	if n, isNil := d.length(); !isNil {
		p.History = make([]HistoryRow, n)
		for i := range p.History {
			p.History[i] = HistoryRow{ID: d.str(), RFQ: d.str(), Direction: Direction(d.str()), Qty: d.dec(),
				Base: d.str(), Quote: d.str(), Kind: d.str(), QuoteCount: d.int(), BestPrice: d.dec(),
				HasBest: d.bool(), Maker: d.str(), Reason: d.str(), At: d.time()}
		}
	}
	return p
}

func (e *encoder) registration(r *Registration) {
	e.str(r.ID)
	e.str(string(r.State))
	e.str(r.DisplayName)
	e.str(r.Hint)
	e.bytes(r.PublicKey)
	e.str(r.PartyID)
	e.topology(r.Topology)
	e.time(r.ExpiresAt)
	e.str(r.KeyHash)
}

func (d *decoder) registration() *Registration {
	return &Registration{ID: d.str(), State: State(d.str()), DisplayName: d.str(), Hint: d.str(),
		PublicKey: d.bytes(), PartyID: d.str(), Topology: d.topology(), ExpiresAt: d.time(), KeyHash: d.str()}
}

func (e *encoder) topology(t []TopologyTx) {
	e.length(len(t), t == nil)
	for _, x := range t {
		e.bytes(x.Hash)
		e.str(x.Description)
	}
}

func (d *decoder) topology() []TopologyTx {
	n, isNil := d.length()
	if isNil {
		return nil
	}
	out := make([]TopologyTx, n)
	for i := range out {
		out[i] = TopologyTx{Hash: d.bytes(), Description: d.str()}
	}
	return out
}

func (e *encoder) rfq(r *RFQ) {
	e.str(r.ID)
	e.str(string(r.State))
	e.str(r.Taker)
	e.str(string(r.Direction))
	e.dec(r.Qty)
	e.str(r.Base)
	e.str(r.Quote)
	e.time(r.Deadline)
	e.strs(r.Invited)
	e.int(r.FeeBps)
	e.time(r.CreatedAt)
	e.time(r.ClosedAt)
	e.strs(r.Quotes)
	e.str(r.SettlingTrade)
}

func (d *decoder) rfq() *RFQ {
	return &RFQ{ID: d.str(), State: State(d.str()), Taker: d.str(), Direction: Direction(d.str()), Qty: d.dec(),
		Base: d.str(), Quote: d.str(), Deadline: d.time(), Invited: d.strs(), FeeBps: d.int(),
		CreatedAt: d.time(), ClosedAt: d.time(), Quotes: d.strs(), SettlingTrade: d.str()}
}

func (e *encoder) amounts(a TradeAmounts) {
	e.dec(a.Qty)
	e.dec(a.QuoteAmount)
	e.dec(a.Fee)
}

func (d *decoder) amounts() TradeAmounts {
	return TradeAmounts{Qty: d.dec(), QuoteAmount: d.dec(), Fee: d.dec()}
}

func (e *encoder) allocations(as []AllocationRef) {
	e.length(len(as), as == nil)
	for i := range as {
		a := &as[i]
		e.str(a.LegID)
		e.str(a.Owner)
		e.bool(a.Send)
		e.str(a.Instrument)
		e.dec(a.Amount)
		e.str(a.CID)
		e.bool(a.Cancelled)
		e.str(a.PreparedID)
		e.bytes(a.Hash)
		e.time(a.PrepExpires)
		e.int(a.Attempt)
	}
}

func (d *decoder) allocations() []AllocationRef {
	n, isNil := d.length()
	if isNil {
		return nil
	}
	out := make([]AllocationRef, n)
	for i := range out {
		out[i] = AllocationRef{LegID: d.str(), Owner: d.str(), Send: d.bool(), Instrument: d.str(), Amount: d.dec(),
			CID: d.str(), Cancelled: d.bool(), PreparedID: d.str(), Hash: d.bytes(), PrepExpires: d.time(), Attempt: d.int()}
	}
	return out
}

func (e *encoder) quote(q *Quote) {
	e.str(q.ID)
	e.str(string(q.State))
	e.str(q.RFQ)
	e.str(q.Maker)
	e.dec(q.Price)
	e.time(q.ValidUntil)
	e.time(q.CreatedAt)
	e.amounts(q.Amounts)
	e.allocations(q.Allocations)
	e.strs(q.Actions)
	e.str(q.Trade)
	e.bool(q.Anchored)
	e.uvarint(q.ReqSeq)
	e.int(q.PendingCancels)
}

func (d *decoder) quote() *Quote {
	return &Quote{ID: d.str(), State: State(d.str()), RFQ: d.str(), Maker: d.str(), Price: d.dec(),
		ValidUntil: d.time(), CreatedAt: d.time(), Amounts: d.amounts(), Allocations: d.allocations(),
		Actions: d.strs(), Trade: d.str(), Anchored: d.bool(), ReqSeq: d.uvarint(), PendingCancels: d.int()}
}

func (e *encoder) trade(t *Trade) {
	e.str(t.ID)
	e.str(string(t.State))
	e.str(t.RFQ)
	e.str(t.Quote)
	e.str(t.Taker)
	e.str(t.Maker)
	e.str(string(t.Direction))
	e.str(t.Base)
	e.str(t.QuoteSym)
	e.dec(t.Price)
	e.amounts(t.Amounts)
	e.time(t.AcceptedAt)
	e.time(t.WindowEnds)
	e.time(t.SettledAt)
	e.str(t.UpdateID)
	e.strs(t.Receipts)
	e.allocations(t.Allocations)
	e.strs(t.Actions)
	e.str(t.FailReason)
	e.int(t.Lists)
	e.int(t.PendingReleases)
	e.bool(t.ReleaseFailed)
	e.bool(t.Rechecked)
}

func (d *decoder) trade() *Trade {
	return &Trade{ID: d.str(), State: State(d.str()), RFQ: d.str(), Quote: d.str(), Taker: d.str(), Maker: d.str(),
		Direction: Direction(d.str()), Base: d.str(), QuoteSym: d.str(), Price: d.dec(), Amounts: d.amounts(),
		AcceptedAt: d.time(), WindowEnds: d.time(), SettledAt: d.time(), UpdateID: d.str(), Receipts: d.strs(),
		Allocations: d.allocations(), Actions: d.strs(), FailReason: d.str(), Lists: d.int(),
		PendingReleases: d.int(), ReleaseFailed: d.bool(), Rechecked: d.bool()}
}

func (e *encoder) action(x *Action) {
	e.str(x.ID)
	e.str(string(x.State))
	e.str(x.Party)
	e.str(x.Purpose)
	e.str(x.Description)
	e.bytes(x.Hash)
	e.str(x.PreparedID)
	e.time(x.CreatedAt)
	e.time(x.ExpiresAt)
	e.str(string(x.Flow))
	e.str(x.FlowID)
	e.str(x.LegID)
	e.str(x.TradeID)
	e.int(x.Attempt)
	e.uvarint(x.Order)
	e.bool(x.Execute != nil)
	if x.Execute != nil {
		e.ledgerCall(x.Execute)
	}
}

func (d *decoder) action() *Action {
	x := &Action{ID: d.str(), State: State(d.str()), Party: d.str(), Purpose: d.str(), Description: d.str(),
		Hash: d.bytes(), PreparedID: d.str(), CreatedAt: d.time(), ExpiresAt: d.time(), Flow: FlowKind(d.str()),
		FlowID: d.str(), LegID: d.str(), TradeID: d.str(), Attempt: d.int(), Order: d.uvarint()}
	if d.bool() {
		c := d.ledgerCall()
		x.Execute = &c
	}
	return x
}

func (e *encoder) continuation(c *Continuation) {
	e.ledgerCall(&c.Call)
	e.str(string(c.Kind))
	e.uvarint(c.ReqSeq)
	e.str(c.Entity)
	e.str(c.LegID)
	e.str(c.Aux)
}

func (d *decoder) continuation() *Continuation {
	return &Continuation{Call: d.ledgerCall(), Kind: ContKind(d.str()), ReqSeq: d.uvarint(), Entity: d.str(),
		LegID: d.str(), Aux: d.str()}
}

func (e *encoder) apiError(x *APIError) {
	e.present(x != nil)
	if x != nil {
		e.int(x.Status)
		e.str(x.Code)
		e.str(x.Message)
	}
}

func (d *decoder) apiError() *APIError {
	if !d.present() {
		return nil
	}
	return &APIError{Status: d.int(), Code: d.str(), Message: d.str()}
}

func (e *encoder) heldReply(h *HeldReply) {
	e.uvarint(h.Seq)
	e.str(string(h.Kind))
	e.str(h.Entity)
	e.str(h.Party)
	e.int(h.Waiting)
	e.length(len(h.Entries), h.Entries == nil)
	for i := range h.Entries {
		x := &h.Entries[i]
		e.str(x.ActionID)
		e.str(x.Status)
		e.str(x.Error)
		e.present(x.Retryable != nil)
		if x.Retryable != nil {
			e.bool(*x.Retryable)
		}
		e.apiError(x.HTTPError)
	}
	e.present(h.Faucet != nil)
	if f := h.Faucet; f != nil {
		e.length(len(f.Sent), f.Sent == nil)
		for _, s := range f.Sent {
			e.str(s.Symbol)
			e.str(s.DisplaySymbol)
			e.dec(s.Amount)
		}
		e.length(len(f.Skipped), f.Skipped == nil)
		for _, s := range f.Skipped {
			e.str(s.Symbol)
			e.str(s.Reason)
		}
		e.int(f.RetryAfterSeconds)
	}
	e.apiError(h.Failure)
	e.bool(h.Batch)
}

func (d *decoder) heldReply() *HeldReply {
	h := &HeldReply{Seq: d.uvarint(), Kind: ContKind(d.str()), Entity: d.str(), Party: d.str(), Waiting: d.int()}
	if n, isNil := d.length(); !isNil {
		h.Entries = make([]ExecEntry, n)
		for i := range h.Entries {
			x := &h.Entries[i]
			x.ActionID, x.Status, x.Error = d.str(), d.str(), d.str()
			if d.present() {
				r := d.bool()
				x.Retryable = &r
			}
			x.HTTPError = d.apiError()
		}
	}
	if d.present() {
		f := &FaucetAnswer{}
		if n, isNil := d.length(); !isNil {
			f.Sent = make([]FaucetSent, n)
			for i := range f.Sent {
				f.Sent[i] = FaucetSent{Symbol: d.str(), DisplaySymbol: d.str(), Amount: d.dec()}
			}
		}
		if n, isNil := d.length(); !isNil {
			f.Skipped = make([]FaucetSkipped, n)
			for i := range f.Skipped {
				f.Skipped[i] = FaucetSkipped{Symbol: d.str(), Reason: d.str()}
			}
		}
		f.RetryAfterSeconds = d.int()
		h.Faucet = f
	}
	h.Failure = d.apiError()
	h.Batch = d.bool()
	return h
}

// ---- Ledger calls ----

func (e *encoder) ledgerCall(c *LedgerCall) {
	e.str(c.CommandID)
	e.str(string(c.Op))
	e.str(c.ActAs)
	e.present(c.Command != nil)
	if c.Command != nil {
		e.command(c.Command)
	}
	e.str(c.PreparedID)
	e.bytes(c.Signature)
	e.str(c.Hint)
	e.bytes(c.PublicKey)
	e.str(c.PartyID)
	e.byteSlices(c.Signatures)
}

func (d *decoder) ledgerCall() LedgerCall {
	c := LedgerCall{CommandID: d.str(), Op: LedgerOp(d.str()), ActAs: d.str()}
	if d.present() {
		c.Command = d.command()
	}
	c.PreparedID, c.Signature, c.Hint = d.str(), d.bytes(), d.str()
	c.PublicKey, c.PartyID, c.Signatures = d.bytes(), d.str(), d.byteSlices()
	return c
}

func (e *encoder) legs(ls []Leg) {
	e.length(len(ls), ls == nil)
	for _, l := range ls {
		e.str(l.Sender)
		e.str(l.Receiver)
		e.str(l.Instrument)
		e.dec(l.Amount)
	}
}

func (d *decoder) legs() []Leg {
	n, isNil := d.length()
	if isNil {
		return nil
	}
	out := make([]Leg, n)
	for i := range out {
		out[i] = Leg{Sender: d.str(), Receiver: d.str(), Instrument: d.str(), Amount: d.dec()}
	}
	return out
}

// command writes a ledger command as a presence bit per kind, then the kinds present.
func (e *encoder) command(c *Command) {
	var mask uint64
	for i, set := range []bool{c.Allocate != nil, c.CancelAllocation != nil, c.Settle != nil, c.Transfer != nil,
		c.AcceptTransfer != nil, c.CreatePreapproval != nil} {
		if set {
			mask |= 1 << i
		}
	}
	e.uvarint(mask)
	if x := c.Allocate; x != nil {
		e.str(x.Executor)
		e.str(x.SettlementID)
		e.str(x.LegID)
		e.str(x.Owner)
		e.bool(x.Send)
		e.str(x.Instrument)
		e.dec(x.Amount)
		e.time(x.AllocateBefore)
		e.time(x.SettleBefore)
	}
	if x := c.CancelAllocation; x != nil {
		e.str(x.AllocationCID)
	}
	if x := c.Settle; x != nil {
		e.str(x.Executor)
		e.str(x.SettlementID)
		e.legs(x.Legs)
		e.strs(x.Allocations)
	}
	if x := c.Transfer; x != nil {
		e.str(x.Sender)
		e.str(x.Receiver)
		e.str(x.Instrument)
		e.dec(x.Amount)
	}
	if x := c.AcceptTransfer; x != nil {
		e.str(x.InstructionCID)
	}
	if x := c.CreatePreapproval; x != nil {
		e.str(x.Receiver)
	}
}

func (d *decoder) command() *Command {
	mask := d.uvarint()
	if mask >= 1<<6 {
		d.fail(errMalformed)
		return nil
	}
	c := &Command{}
	if mask&1 != 0 {
		c.Allocate = &AllocateCmd{Executor: d.str(), SettlementID: d.str(), LegID: d.str(), Owner: d.str(),
			Send: d.bool(), Instrument: d.str(), Amount: d.dec(), AllocateBefore: d.time(), SettleBefore: d.time()}
	}
	if mask&2 != 0 {
		c.CancelAllocation = &CancelAllocationCmd{AllocationCID: d.str()}
	}
	if mask&4 != 0 {
		c.Settle = &SettleCmd{Executor: d.str(), SettlementID: d.str(), Legs: d.legs(), Allocations: d.strs()}
	}
	if mask&8 != 0 {
		c.Transfer = &TransferCmd{Sender: d.str(), Receiver: d.str(), Instrument: d.str(), Amount: d.dec()}
	}
	if mask&16 != 0 {
		c.AcceptTransfer = &AcceptTransferCmd{InstructionCID: d.str()}
	}
	if mask&32 != 0 {
		c.CreatePreapproval = &CreatePreapprovalCmd{Receiver: d.str()}
	}
	return c
}
