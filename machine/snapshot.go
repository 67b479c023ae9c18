package machine

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"github.com/deskco/rfqdesk/internal/wire"
	"github.com/deskco/rfqdesk/money"
	"io"
	"slices"
)

// Desk snapshots.
//
// A snapshot is the binary encoding of the whole Desk: the magic "RFQDDESK", a uvarint
// format version (snapshotVersion), then every field in declaration order with the
// primitives of internal/wire. The configuration is embedded as its JSON (it is small and
// read once); maps are written as their entry count followed by the entries in ascending
// key order, so the bytes are a function of the state alone and Digest can hash them.
// Restore reads only this format.

// snapshotMagic starts every desk snapshot.
const snapshotMagic = "RFQDDESK"

// snapshotVersion is the version of the binary snapshot format written by this desk.
// Version 2 added each socket's cancel-on-disconnect mark and each quote's revoke reason;
// version 3 each RFQ's USD notional, then after the failed trades the stream section
// (every party's stream sequence number and retained events, stream_resume.go), the
// makers' protections (maker_protection.go), the idempotency records (idempotency.go),
// the declines section, which it always writes (an empty one is a zero count), and the
// makers' scorecards (scorecard.go); version 4 the stream tickets after the scorecards
// (stream_ticket.go); version 5, after the stream tickets, the serialized prepared
// transactions and the ledger offsets recorded with the calls (prepared_blobs.go), then the
// coin selection section (coinsel.go: the input holdings of actions and allocations, the
// deferred prepares).
const snapshotVersion = 5

// snapshotVersion1 is the oldest version still read: version 2 without the socket mark
// and the quote revoke reason (an older desk marked no socket and recorded no reason).
const snapshotVersion1 = 1

// snapshotVersion2 is the previous version, still read: version 3 without the RFQs'
// notionals (recomputed from the configuration's usdPrice), the stream section (an older
// desk numbered no event, so every party starts again at 1), the protections (none set),
// the idempotency records and the scorecards (an older desk kept none), and with the declines section present
// only when some RFQ has declines.
const snapshotVersion2 = 2

// snapshotVersion3 is read too: version 4 without the stream tickets (an older desk issued
// none).
const snapshotVersion3 = 3

// snapshotVersion4 is read too: version 5 without the prepared transactions and offsets
// (an older ledger answered a prepared id only and no offset, so an older desk kept none)
// and without the coin selection section (an older desk named no input holdings, so
// nothing is reserved and no prepare waits).
const snapshotVersion4 = 4

// EncodeSnapshot renders the desk's whole state in the binary snapshot format. Its
// SHA-256 is the desk's Digest.
func (d *Desk) EncodeSnapshot() ([]byte, error) {
	e := &encoder{B: make([]byte, 0, d.sizeHint())}
	if err := d.encodeSnapshot(e); err != nil {
		return nil, err
	}
	return e.B, nil
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
	e.RawStr(snapshotMagic)
	e.Uvarint(snapshotVersion)
	cfg, err := json.Marshal(d.Cfg)
	if err != nil {
		return fmt.Errorf("encode desk configuration: %w", err)
	}
	e.Bytes(cfg)
	e.Uvarint(d.IDs.Seed)
	e.Uvarint(d.IDs.Counter)
	e.Time(d.Now)

	writePtrMap(e, d.Parties, func(e *encoder, p *Party) { writeParty(e, p) })
	writeMap(e, d.HintIndex, (*encoder).Str)
	writeMap(e, d.KeyIndex, (*encoder).Str)
	writePtrMap(e, d.Registrations, func(e *encoder, r *Registration) { writeRegistration(e, r) })
	writePtrMap(e, d.Challenges, func(e *encoder, c *Challenge) { e.Str(c.Text); e.Str(c.PartyID); e.Time(c.ExpiresAt) })
	writePtrMap(e, d.Sockets, func(e *encoder, s *Socket) {
		e.Uvarint(s.ID)
		e.Str(s.PartyID)
		e.Str(s.KeyHash)
		e.Bool(s.CancelOnDisconnect)
	})
	writePtrMap(e, d.RFQs, func(e *encoder, r *RFQ) {
		writeRfq(e, r)
		r.NotionalUSD.Encode(e) // since snapshot version 3
	})
	writePtrMap(e, d.Quotes, func(e *encoder, q *Quote) { writeQuote(e, q) })
	writePtrMap(e, d.Trades, func(e *encoder, t *Trade) { writeTrade(e, t) })
	writePtrMap(e, d.Actions, func(e *encoder, x *Action) { writeAction(e, x) })
	writePtrMap(e, d.DoneActions, func(e *encoder, x *DoneAction) {
		e.Str(x.ID)
		e.Str(x.Party)
		e.Str(string(x.Outcome))
		e.Time(x.Until)
	})
	writeMap(e, d.Deposits, (*encoder).Str)
	writeMap(e, d.Withdrawals, (*encoder).Str)
	writeMap(e, d.FaucetNext, (*encoder).Time)
	writePtrMap(e, d.Pending, func(e *encoder, c *Continuation) { writeContinuation(e, c) })
	writePtrMap(e, d.Held, func(e *encoder, h *HeldReply) { writeHeldReply(e, h) })

	writeSlice(e, d.Deadlines.Items, func(e *encoder, dl *Deadline) {
		e.Time(dl.At)
		e.Uvarint(dl.Order)
		e.Str(string(dl.Kind))
		e.Str(dl.ID)
		e.Uvarint(dl.Seq)
		e.FlushSome() // the queue holds every pending deadline: hand it over in pieces
	})
	e.Uvarint(d.Deadlines.Next)
	e.Strs(d.FailedTrades)
	if err := writeStreamsSection(e, d.Streams); err != nil { // since version 3
		return fmt.Errorf("encode desk state: %w", err)
	}
	writeProtections(e, d.Protections) // since version 3
	writeIdemSection(e, d.Idem)        // since version 3
	writeDeclinesSection(e, d.RFQs, true)
	writeScorecards(e, d.Scorecards)
	writeStreamTickets(e, d.StreamTickets) // since version 4
	writePreparedSection(e, d)             // since version 5
	writeCoinSelSection(e, d)              // since version 5
	if e.Err() != nil {
		return fmt.Errorf("encode desk state: %w", e.Err())
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
	e := wire.NewStreamEncoder(w, make([]byte, 0, 2*wire.FlushAt))
	if err := d.encodeSnapshot(e); err != nil {
		return err
	}
	e.Flush()
	if err := e.Err(); err != nil {
		return fmt.Errorf("encode desk state: %w", err)
	}
	return nil
}

// VerifyCheckpoint reports whether the desk's digest (Digest) is the one the checkpoint
// carries.
func (d *Desk) VerifyCheckpoint(cp Checkpoint) (bool, error) {
	sum, err := d.Digest()
	if err != nil {
		return false, err
	}
	return fmt.Sprintf("%x", sum) == cp.Digest, nil
}

// Restore rebuilds a desk from a snapshot in the binary format of EncodeSnapshot. Any other
// bytes, such as the JSON snapshots of earlier desks, are refused with an error naming
// what they are.
func Restore(b []byte) (*Desk, error) {
	if !bytes.HasPrefix(b, []byte(snapshotMagic)) {
		what := "not a desk snapshot"
		if len(b) > 0 && b[0] == '{' {
			what = "a JSON desk snapshot (written by an earlier desk)"
		}
		return nil, fmt.Errorf("decode desk snapshot: %s; this desk reads only binary snapshots of versions %d to %d", what, snapshotVersion1, snapshotVersion)
	}
	d, err := decodeSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("decode desk snapshot: %w", err)
	}
	if err := d.Cfg.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot configuration: %w", err)
	}
	return d, nil
}

func decodeSnapshot(b []byte) (*Desk, error) {
	dec := wire.NewBulkDecoder(b)
	dec.Raw(len(snapshotMagic))
	v := dec.Uvarint()
	if dec.Err() == nil && (v < snapshotVersion1 || v > snapshotVersion) {
		return nil, fmt.Errorf("binary snapshot version %d; this desk reads only versions %d to %d", v, snapshotVersion1, snapshotVersion)
	}
	v2 := v >= snapshotVersion2
	v3 := v >= snapshotVersion3
	d := &Desk{}
	if cfg := dec.Bytes(); dec.Err() == nil {
		if err := json.Unmarshal(cfg, &d.Cfg); err != nil {
			return nil, fmt.Errorf("configuration: %w", err)
		}
	}
	d.IDs.Seed = dec.Uvarint()
	d.IDs.Counter = dec.Uvarint()
	d.Now = dec.Time()

	d.Parties = readMap(dec, (*decoder).Str, readParty)
	d.HintIndex = readMap(dec, (*decoder).Str, (*decoder).Str)
	d.KeyIndex = readMap(dec, (*decoder).Str, (*decoder).Str)
	d.Registrations = readMap(dec, (*decoder).Str, readRegistration)
	d.Challenges = readMap(dec, (*decoder).Str, func(dec *decoder) *Challenge {
		return &Challenge{Text: dec.Str(), PartyID: dec.Str(), ExpiresAt: dec.Time()}
	})
	d.Sockets = readMap(dec, (*decoder).Uvarint, func(dec *decoder) *Socket {
		s := &Socket{ID: dec.Uvarint(), PartyID: dec.Str(), KeyHash: dec.Str()}
		if v2 {
			s.CancelOnDisconnect = dec.Bool()
		}
		return s
	})
	d.RFQs = readMap(dec, (*decoder).Str, func(dec *decoder) *RFQ {
		r := readRfq(dec)
		if v3 {
			r.NotionalUSD = money.ReadDecimal(dec)
		} else if base, ok := d.Cfg.instrument(r.Base); ok {
			r.NotionalUSD = r.Qty.MulDown(base.USDPrice)
		} else {
			r.NotionalUSD = money.FromInt(0)
		}
		return r
	})
	d.Quotes = readMap(dec, (*decoder).Str, func(dec *decoder) *Quote {
		q := readQuote(dec)
		if v2 {
			q.RevokeReason = dec.Str()
		}
		return q
	})
	d.Trades = readMap(dec, (*decoder).Str, readTrade)
	d.Actions = readMap(dec, (*decoder).Str, readAction)
	d.DoneActions = readMap(dec, (*decoder).Str, func(dec *decoder) *DoneAction {
		return &DoneAction{ID: dec.Str(), Party: dec.Str(), Outcome: State(dec.Str()), Until: dec.Time()}
	})
	d.Deposits = readMap(dec, (*decoder).Str, (*decoder).Str)
	d.Withdrawals = readMap(dec, (*decoder).Str, (*decoder).Str)
	d.FaucetNext = readMap(dec, (*decoder).Str, (*decoder).Time)
	d.Pending = readMap(dec, (*decoder).Str, readContinuation)
	d.Held = readMap(dec, (*decoder).Uvarint, readHeldReply)

	d.Deadlines.Items = readSlice(dec, func(dec *decoder) Deadline {
		return Deadline{At: dec.Time(), Order: dec.Uvarint(), Kind: DeadlineKind(dec.Str()), ID: dec.Str(), Seq: dec.Uvarint()}
	})
	d.Deadlines.Next = dec.Uvarint()
	d.FailedTrades = dec.Strs()
	if dec.Err() == nil && v3 {
		d.Streams = readStreamsSection(dec)
	}
	d.Protections = map[string]*Protection{}
	if v3 {
		d.Protections = readProtections(dec)
	}
	if dec.Err() == nil && v3 {
		if err := readIdemSection(dec, d); err != nil {
			return nil, fmt.Errorf("idempotency records: %w", err)
		}
	}
	if dec.Err() == nil && (v3 || dec.Left() > 0) {
		if err := readDeclinesSection(dec, d.RFQs); err != nil {
			return nil, err
		}
	}
	if v3 {
		d.Scorecards = readScorecards(dec)
	}
	if v > snapshotVersion3 { // an older desk issued no ticket
		d.StreamTickets = readStreamTickets(dec)
	}
	if v > snapshotVersion4 { // an older desk kept no prepared transaction and reserved nothing
		readPreparedSection(dec, d)
		readCoinSelSection(dec, d)
	}
	if dec.Err() != nil {
		return nil, dec.Err()
	}
	if dec.Left() != 0 {
		return nil, fmt.Errorf("%d bytes after the desk state", dec.Left())
	}
	return d, nil
}

// writeMap writes a map's entries in ascending key order, every value present.
func writeMap[K string | uint64, V any](e *encoder, m map[K]V, val func(*encoder, V)) {
	writeEntries(e, m, func(V) bool { return true }, val)
}

// writePtrMap is writeMap for a map of pointers: a nil pointer is written as absent.
func writePtrMap[K string | uint64, T any](e *encoder, m map[K]*T, val func(*encoder, *T)) {
	writeEntries(e, m, func(v *T) bool { return v != nil }, val)
}

// writeEntries writes a map's entry count, then its entries in ascending key order: the
// key, whether the value is present, and the value if it is.
func writeEntries[K string | uint64, V any](e *encoder, m map[K]V, present func(V) bool, val func(*encoder, V)) {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		switch k := any(&k).(type) {
		case *string:
			e.Str(*k)
		case *uint64:
			e.Uvarint(*k)
		}
		v := m[k]
		ok := present(v)
		e.Bool(ok)
		if ok {
			val(e, v)
		}
		e.FlushSome()
	}
}

// writeSlice writes a slice's length, a nil slice kept apart from an empty one, then each
// element.
func writeSlice[T any](e *encoder, s []T, each func(*encoder, *T)) {
	e.Len(len(s), s == nil)
	for i := range s {
		each(e, &s[i])
	}
}

// readSlice reads a slice written by writeSlice.
func readSlice[T any](d *decoder, each func(*decoder) T) []T {
	n, isNil := d.Len()
	if isNil {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = each(d)
	}
	return out
}

// readMap reads a map written by writeMap; it always returns a non-nil map.
func readMap[K comparable, V any](dec *decoder, key func(*decoder) K, val func(*decoder) V) map[K]V {
	n := dec.Count()
	m := make(map[K]V, n)
	for i := 0; i < n && dec.Err() == nil; i++ {
		k := key(dec)
		var v V
		if dec.Bool() {
			v = val(dec)
		}
		m[k] = v
	}
	return m
}

// ---- Entities ----

func writeParty(e *encoder, p *Party) {
	e.Str(p.ID)
	e.Str(p.Hint)
	e.Str(p.DisplayName)
	e.Bytes(p.PublicKey)
	e.Str(p.KeyHash)
	e.Str(string(p.House))
	e.Int(p.Online)
	e.Time(p.RegisteredAt)
	e.Strs(p.Trades)
	writeSlice(e, p.History, func(e *encoder, h *HistoryRow) {
		e.Str(h.ID)
		e.Str(h.RFQ)
		e.Str(string(h.Direction))
		h.Qty.Encode(e)
		e.Str(h.Base)
		e.Str(h.Quote)
		e.Str(h.Kind)
		e.Int(h.QuoteCount)
		h.BestPrice.Encode(e)
		e.Bool(h.HasBest)
		e.Str(h.Maker)
		e.Str(h.Reason)
		e.Time(h.At)
	})
}

func readParty(d *decoder) *Party {
	p := &Party{ID: d.Str(), Hint: d.Str(), DisplayName: d.Str(), PublicKey: d.Bytes(), KeyHash: d.Str(),
		House: HouseRole(d.Str()), Online: d.Int(), RegisteredAt: d.Time(), Trades: d.Strs()}
	p.History = readSlice(d, func(d *decoder) HistoryRow {
		return HistoryRow{ID: d.Str(), RFQ: d.Str(), Direction: Direction(d.Str()), Qty: money.ReadDecimal(d),
			Base: d.Str(), Quote: d.Str(), Kind: d.Str(), QuoteCount: d.Int(), BestPrice: money.ReadDecimal(d),
			HasBest: d.Bool(), Maker: d.Str(), Reason: d.Str(), At: d.Time()}
	})
	return p
}

func writeRegistration(e *encoder, r *Registration) {
	e.Str(r.ID)
	e.Str(string(r.State))
	e.Str(r.DisplayName)
	e.Str(r.Hint)
	e.Bytes(r.PublicKey)
	e.Str(r.PartyID)
	writeTopology(e, r.Topology)
	e.Time(r.ExpiresAt)
	e.Str(r.KeyHash)
}

func readRegistration(d *decoder) *Registration {
	return &Registration{ID: d.Str(), State: State(d.Str()), DisplayName: d.Str(), Hint: d.Str(),
		PublicKey: d.Bytes(), PartyID: d.Str(), Topology: readTopology(d), ExpiresAt: d.Time(), KeyHash: d.Str()}
}

func writeTopology(e *encoder, t []TopologyTx) {
	writeSlice(e, t, func(e *encoder, x *TopologyTx) {
		e.Bytes(x.Hash)
		e.Str(x.Description)
	})
}

func readTopology(d *decoder) []TopologyTx {
	return readSlice(d, func(d *decoder) TopologyTx { return TopologyTx{Hash: d.Bytes(), Description: d.Str()} })
}

func writeRfq(e *encoder, r *RFQ) {
	e.Str(r.ID)
	e.Str(string(r.State))
	e.Str(r.Taker)
	e.Str(string(r.Direction))
	r.Qty.Encode(e)
	e.Str(r.Base)
	e.Str(r.Quote)
	e.Time(r.Deadline)
	e.Strs(r.Invited)
	e.Int(r.FeeBps)
	e.Time(r.CreatedAt)
	e.Time(r.ClosedAt)
	e.Strs(r.Quotes)
	e.Str(r.SettlingTrade)
}

func readRfq(d *decoder) *RFQ {
	return &RFQ{ID: d.Str(), State: State(d.Str()), Taker: d.Str(), Direction: Direction(d.Str()), Qty: money.ReadDecimal(d),
		Base: d.Str(), Quote: d.Str(), Deadline: d.Time(), Invited: d.Strs(), FeeBps: d.Int(),
		CreatedAt: d.Time(), ClosedAt: d.Time(), Quotes: d.Strs(), SettlingTrade: d.Str()}
}

func writeAmounts(e *encoder, a TradeAmounts) {
	a.Qty.Encode(e)
	a.QuoteAmount.Encode(e)
	a.Fee.Encode(e)
}

func readAmounts(d *decoder) TradeAmounts {
	return TradeAmounts{Qty: money.ReadDecimal(d), QuoteAmount: money.ReadDecimal(d), Fee: money.ReadDecimal(d)}
}

func writeAllocations(e *encoder, as []AllocationRef) {
	writeSlice(e, as, func(e *encoder, a *AllocationRef) {
		e.Str(a.LegID)
		e.Str(a.Owner)
		e.Bool(a.Send)
		e.Str(a.Instrument)
		a.Amount.Encode(e)
		e.Str(a.CID)
		e.Bool(a.Cancelled)
		e.Str(a.PreparedID)
		e.Bytes(a.Hash)
		e.Time(a.PrepExpires)
		e.Int(a.Attempt)
	})
}

func readAllocations(d *decoder) []AllocationRef {
	return readSlice(d, func(d *decoder) AllocationRef {
		return AllocationRef{LegID: d.Str(), Owner: d.Str(), Send: d.Bool(), Instrument: d.Str(), Amount: money.ReadDecimal(d),
			CID: d.Str(), Cancelled: d.Bool(), PreparedID: d.Str(), Hash: d.Bytes(), PrepExpires: d.Time(), Attempt: d.Int()}
	})
}

func writeQuote(e *encoder, q *Quote) {
	e.Str(q.ID)
	e.Str(string(q.State))
	e.Str(q.RFQ)
	e.Str(q.Maker)
	q.Price.Encode(e)
	e.Time(q.ValidUntil)
	e.Time(q.CreatedAt)
	writeAmounts(e, q.Amounts)
	writeAllocations(e, q.Allocations)
	e.Strs(q.Actions)
	e.Str(q.Trade)
	e.Bool(q.Anchored)
	e.Uvarint(q.ReqSeq)
	e.Int(q.PendingCancels)
	e.Str(q.RevokeReason) // since snapshot version 2
}

func readQuote(d *decoder) *Quote {
	return &Quote{ID: d.Str(), State: State(d.Str()), RFQ: d.Str(), Maker: d.Str(), Price: money.ReadDecimal(d),
		ValidUntil: d.Time(), CreatedAt: d.Time(), Amounts: readAmounts(d), Allocations: readAllocations(d),
		Actions: d.Strs(), Trade: d.Str(), Anchored: d.Bool(), ReqSeq: d.Uvarint(), PendingCancels: d.Int()}
}

func writeTrade(e *encoder, t *Trade) {
	e.Str(t.ID)
	e.Str(string(t.State))
	e.Str(t.RFQ)
	e.Str(t.Quote)
	e.Str(t.Taker)
	e.Str(t.Maker)
	e.Str(string(t.Direction))
	e.Str(t.Base)
	e.Str(t.QuoteSym)
	t.Price.Encode(e)
	writeAmounts(e, t.Amounts)
	e.Time(t.AcceptedAt)
	e.Time(t.WindowEnds)
	e.Time(t.SettledAt)
	e.Str(t.UpdateID)
	e.Strs(t.Receipts)
	writeAllocations(e, t.Allocations)
	e.Strs(t.Actions)
	e.Str(t.FailReason)
	e.Int(t.Lists)
	e.Int(t.PendingReleases)
	e.Bool(t.ReleaseFailed)
	e.Bool(t.Rechecked)
}

func readTrade(d *decoder) *Trade {
	return &Trade{ID: d.Str(), State: State(d.Str()), RFQ: d.Str(), Quote: d.Str(), Taker: d.Str(), Maker: d.Str(),
		Direction: Direction(d.Str()), Base: d.Str(), QuoteSym: d.Str(), Price: money.ReadDecimal(d), Amounts: readAmounts(d),
		AcceptedAt: d.Time(), WindowEnds: d.Time(), SettledAt: d.Time(), UpdateID: d.Str(), Receipts: d.Strs(),
		Allocations: readAllocations(d), Actions: d.Strs(), FailReason: d.Str(), Lists: d.Int(),
		PendingReleases: d.Int(), ReleaseFailed: d.Bool(), Rechecked: d.Bool()}
}

func writeAction(e *encoder, x *Action) {
	e.Str(x.ID)
	e.Str(string(x.State))
	e.Str(x.Party)
	e.Str(x.Purpose)
	e.Str(x.Description)
	e.Bytes(x.Hash)
	e.Str(x.PreparedID)
	e.Time(x.CreatedAt)
	e.Time(x.ExpiresAt)
	e.Str(string(x.Flow))
	e.Str(x.FlowID)
	e.Str(x.LegID)
	e.Str(x.TradeID)
	e.Int(x.Attempt)
	e.Uvarint(x.Order)
	e.Bool(x.Execute != nil)
	if x.Execute != nil {
		writeLedgerCall(e, x.Execute)
	}
}

func readAction(d *decoder) *Action {
	x := &Action{ID: d.Str(), State: State(d.Str()), Party: d.Str(), Purpose: d.Str(), Description: d.Str(),
		Hash: d.Bytes(), PreparedID: d.Str(), CreatedAt: d.Time(), ExpiresAt: d.Time(), Flow: FlowKind(d.Str()),
		FlowID: d.Str(), LegID: d.Str(), TradeID: d.Str(), Attempt: d.Int(), Order: d.Uvarint()}
	if d.Bool() {
		c := readLedgerCall(d)
		x.Execute = &c
	}
	return x
}

func writeContinuation(e *encoder, c *Continuation) {
	writeLedgerCall(e, &c.Call)
	e.Str(string(c.Kind))
	e.Uvarint(c.ReqSeq)
	e.Str(c.Entity)
	e.Str(c.LegID)
	e.Str(c.Aux)
}

func readContinuation(d *decoder) *Continuation {
	return &Continuation{Call: readLedgerCall(d), Kind: ContKind(d.Str()), ReqSeq: d.Uvarint(), Entity: d.Str(),
		LegID: d.Str(), Aux: d.Str()}
}

func writeApiError(e *encoder, x *APIError) {
	e.Bool(x != nil)
	if x != nil {
		e.Int(x.Status)
		e.Str(x.Code)
		e.Str(x.Message)
	}
}

func readApiError(d *decoder) *APIError {
	if !d.Bool() {
		return nil
	}
	return &APIError{Status: d.Int(), Code: d.Str(), Message: d.Str()}
}

func writeHeldReply(e *encoder, h *HeldReply) {
	e.Uvarint(h.Seq)
	e.Str(string(h.Kind))
	e.Str(h.Entity)
	e.Str(h.Party)
	e.Int(h.Waiting)
	writeSlice(e, h.Entries, func(e *encoder, x *ExecEntry) {
		e.Str(x.ActionID)
		e.Str(x.Status)
		e.Str(x.Error)
		e.Bool(x.Retryable != nil)
		if x.Retryable != nil {
			e.Bool(*x.Retryable)
		}
		writeApiError(e, x.HTTPError)
	})
	e.Bool(h.Faucet != nil)
	if f := h.Faucet; f != nil {
		writeSlice(e, f.Sent, func(e *encoder, s *FaucetSent) {
			e.Str(s.Symbol)
			e.Str(s.DisplaySymbol)
			s.Amount.Encode(e)
		})
		writeSlice(e, f.Skipped, func(e *encoder, s *FaucetSkipped) {
			e.Str(s.Symbol)
			e.Str(s.Reason)
		})
		e.Int(f.RetryAfterSeconds)
	}
	writeApiError(e, h.Failure)
	e.Bool(h.Batch)
}

func readHeldReply(d *decoder) *HeldReply {
	h := &HeldReply{Seq: d.Uvarint(), Kind: ContKind(d.Str()), Entity: d.Str(), Party: d.Str(), Waiting: d.Int()}
	h.Entries = readSlice(d, func(d *decoder) ExecEntry {
		x := ExecEntry{ActionID: d.Str(), Status: d.Str(), Error: d.Str()}
		if d.Bool() {
			r := d.Bool()
			x.Retryable = &r
		}
		x.HTTPError = readApiError(d)
		return x
	})
	if d.Bool() {
		f := &FaucetAnswer{}
		f.Sent = readSlice(d, func(d *decoder) FaucetSent {
			return FaucetSent{Symbol: d.Str(), DisplaySymbol: d.Str(), Amount: money.ReadDecimal(d)}
		})
		f.Skipped = readSlice(d, func(d *decoder) FaucetSkipped { return FaucetSkipped{Symbol: d.Str(), Reason: d.Str()} })
		f.RetryAfterSeconds = d.Int()
		h.Faucet = f
	}
	h.Failure = readApiError(d)
	h.Batch = d.Bool()
	return h
}

// ---- Ledger calls ----

func writeLedgerCall(e *encoder, c *LedgerCall) {
	e.Str(c.CommandID)
	e.Str(string(c.Op))
	e.Str(c.ActAs)
	e.Bool(c.Command != nil)
	if c.Command != nil {
		writeCommand(e, c.Command)
	}
	e.Str(c.PreparedID)
	e.Bytes(c.Signature)
	e.Str(c.Hint)
	e.Bytes(c.PublicKey)
	e.Str(c.PartyID)
	e.ByteSlices(c.Signatures)
}

func readLedgerCall(d *decoder) LedgerCall {
	c := LedgerCall{CommandID: d.Str(), Op: LedgerOp(d.Str()), ActAs: d.Str()}
	if d.Bool() {
		c.Command = readCommand(d)
	}
	c.PreparedID, c.Signature, c.Hint = d.Str(), d.Bytes(), d.Str()
	c.PublicKey, c.PartyID, c.Signatures = d.Bytes(), d.Str(), d.ByteSlices()
	return c
}

func writeLegs(e *encoder, ls []Leg) {
	writeSlice(e, ls, func(e *encoder, l *Leg) {
		e.Str(l.Sender)
		e.Str(l.Receiver)
		e.Str(l.Instrument)
		l.Amount.Encode(e)
	})
}

func readLegs(d *decoder) []Leg {
	return readSlice(d, func(d *decoder) Leg {
		return Leg{Sender: d.Str(), Receiver: d.Str(), Instrument: d.Str(), Amount: money.ReadDecimal(d)}
	})
}

// command writes a ledger command as a presence bit per kind, then the kinds present.
func writeCommand(e *encoder, c *Command) {
	var mask uint64
	for i, set := range []bool{c.Allocate != nil, c.CancelAllocation != nil, c.Settle != nil, c.Transfer != nil,
		c.AcceptTransfer != nil, c.CreatePreapproval != nil} {
		if set {
			mask |= 1 << i
		}
	}
	e.Uvarint(mask)
	if x := c.Allocate; x != nil {
		e.Str(x.Executor)
		e.Str(x.SettlementID)
		e.Str(x.LegID)
		e.Str(x.Owner)
		e.Bool(x.Send)
		e.Str(x.Instrument)
		x.Amount.Encode(e)
		e.Time(x.AllocateBefore)
		e.Time(x.SettleBefore)
	}
	if x := c.CancelAllocation; x != nil {
		e.Str(x.AllocationCID)
	}
	if x := c.Settle; x != nil {
		e.Str(x.Executor)
		e.Str(x.SettlementID)
		writeLegs(e, x.Legs)
		e.Strs(x.Allocations)
	}
	if x := c.Transfer; x != nil {
		e.Str(x.Sender)
		e.Str(x.Receiver)
		e.Str(x.Instrument)
		x.Amount.Encode(e)
	}
	if x := c.AcceptTransfer; x != nil {
		e.Str(x.InstructionCID)
	}
	if x := c.CreatePreapproval; x != nil {
		e.Str(x.Receiver)
	}
}

func readCommand(d *decoder) *Command {
	mask := d.Uvarint()
	if mask >= 1<<6 {
		d.Fail(wire.ErrMalformed)
		return nil
	}
	c := &Command{}
	if mask&1 != 0 {
		c.Allocate = &AllocateCmd{Executor: d.Str(), SettlementID: d.Str(), LegID: d.Str(), Owner: d.Str(),
			Send: d.Bool(), Instrument: d.Str(), Amount: money.ReadDecimal(d), AllocateBefore: d.Time(), SettleBefore: d.Time()}
	}
	if mask&2 != 0 {
		c.CancelAllocation = &CancelAllocationCmd{AllocationCID: d.Str()}
	}
	if mask&4 != 0 {
		c.Settle = &SettleCmd{Executor: d.Str(), SettlementID: d.Str(), Legs: readLegs(d), Allocations: d.Strs()}
	}
	if mask&8 != 0 {
		c.Transfer = &TransferCmd{Sender: d.Str(), Receiver: d.Str(), Instrument: d.Str(), Amount: money.ReadDecimal(d)}
	}
	if mask&16 != 0 {
		c.AcceptTransfer = &AcceptTransferCmd{InstructionCID: d.Str()}
	}
	if mask&32 != 0 {
		c.CreatePreapproval = &CreatePreapprovalCmd{Receiver: d.Str()}
	}
	return c
}
