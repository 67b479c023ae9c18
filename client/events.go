package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Stream event types of the desk (Event.Type).
const (
	EventRFQCreated      = "rfq.created"
	EventRFQClosed       = "rfq.closed"
	EventRFQExpired      = "rfq.expired"
	EventQuoteCreated    = "quote.created"
	EventQuoteStatus     = "quote.status"
	EventQuoteAnchored   = "quote.anchored"
	EventTradeStep       = "trade.step"
	EventTradeSettled    = "trade.settled"
	EventTradeFailed     = "trade.failed"
	EventSignRequested   = "sign.requested"
	EventSignCompleted   = "sign.completed"
	EventHistoryRecorded = "history.recorded"
	EventResync          = "resync"
)

// EventConnected is the type of the synthetic event a Stream delivers each time a socket
// opens, before any frame of that socket. The desk replays a snapshot on every connect, so
// it tells the consumer to treat what follows as a fresh snapshot (a resync). It never comes
// from the desk; its payload decodes with Event.Connected.
const EventConnected = "client.connected"

// ErrUnknownEvent is returned by Event.Decode for a type this client does not know.
var ErrUnknownEvent = errors.New("unknown event type")

// Event is one stream frame `{type, payload}`, or the synthetic EventConnected marker.
// Payload holds the raw JSON; the typed helpers decode it.
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	// Seq is the party's sequence number of the event (resume.go); 0 on the snapshot
	// frames, on the frames that frame a connect, and from a desk that numbers nothing.
	Seq uint64 `json:"seq,omitempty"`
}

// RFQRef is the payload of rfq.closed and rfq.expired.
type RFQRef struct {
	RFQID string `json:"rfqId"`
}

// QuoteStatus is the payload of quote.status.
type QuoteStatus struct {
	QuoteID string `json:"quoteId"`
	RFQID   string `json:"rfqId"`
	// Status is one of the Quote* status constants.
	Status string `json:"status"`
	// Reason is "disconnect" in the maker's frame of a quote revoked by cancel-on-disconnect
	// (StreamOptions.CancelOnDisconnect), else empty.
	Reason string `json:"reason,omitempty"`
}

// QuoteAnchored is the payload of quote.anchored: the quote is live.
type QuoteAnchored struct {
	QuoteID    string   `json:"quoteId"`
	RFQID      string   `json:"rfqId"`
	AnchorCIDs []string `json:"anchorCids"`
}

// TradeStep is the payload of trade.step.
type TradeStep struct {
	TradeID string `json:"tradeId"`
	RFQID   string `json:"rfqId"`
	// Step is TradeStepAllocated.
	Step string `json:"step"`
	// Refs are the contract ids the phase created.
	Refs []string `json:"refs"`
}

// TradeFailure is the payload of trade.failed.
type TradeFailure struct {
	TradeID string `json:"tradeId"`
	RFQID   string `json:"rfqId"`
	Reason  string `json:"reason"`
}

// SignCompleted is the payload of sign.completed: the action left the queue.
type SignCompleted struct {
	ActionID string `json:"actionId"`
}

// Resync is the (empty) payload of resync: the desk reset its state; the stream reconnects
// and a fresh snapshot follows.
type Resync struct{}

// Connected is the payload of the synthetic EventConnected marker.
type Connected struct {
	// Reconnect is false for the stream's first socket, true for later ones.
	Reconnect bool `json:"reconnect"`
	// Connects counts the sockets opened so far by this stream, this one included.
	Connects uint64 `json:"connects"`
	// Resume is set when the socket asked to resume after Since (resume.go): keep the
	// state unless an EventStreamGap follows.
	Resume bool   `json:"resume,omitempty"`
	Since  uint64 `json:"since,omitempty"`
}

// newPayload returns a pointer to the payload type of an event type, or nil when the type
// is unknown.
func newPayload(typ string) any {
	switch typ {
	case EventRFQCreated:
		return new(RFQ)
	case EventRFQClosed, EventRFQExpired:
		return new(RFQRef)
	case EventQuoteCreated:
		return new(Quote)
	case EventQuoteStatus:
		return new(QuoteStatus)
	case EventQuoteAnchored:
		return new(QuoteAnchored)
	case EventTradeStep:
		return new(TradeStep)
	case EventTradeSettled:
		return new(Trade)
	case EventTradeFailed:
		return new(TradeFailure)
	case EventSignRequested:
		return new(SignAction)
	case EventSignCompleted:
		return new(SignCompleted)
	case EventHistoryRecorded:
		return new(RFQHistory)
	case EventResync:
		return new(Resync)
	case EventConnected:
		return new(Connected)
	case EventMakerProtection:
		return new(ProtectionTripped)
	case EventSnapshotEnd:
		return new(SnapshotEnd)
	case EventStreamResumed:
		return new(StreamResumed)
	case EventStreamGap:
		return new(StreamGap)
	case EventQuoteDeclined:
		return new(QuoteDeclined)
	}
	return nil
}

// KnownEvent reports whether typ is an event type this client decodes.
func KnownEvent(typ string) bool { return newPayload(typ) != nil }

// Decode decodes the payload into the pointer type of its event type: *RFQ (rfq.created),
// *RFQRef (rfq.closed, rfq.expired), *Quote, *QuoteStatus, *QuoteAnchored, *TradeStep,
// *Trade (trade.settled), *TradeFailure, *SignAction (sign.requested), *SignCompleted,
// *RFQHistory (history.recorded), *Resync, *Connected, *ProtectionTripped
// (maker.protection), *SnapshotEnd, *StreamResumed, *StreamGap or *QuoteDeclined
// (quote.declined). Use it in a type switch. An unknown
// type gives an error wrapping ErrUnknownEvent.
func (e Event) Decode() (any, error) {
	p := newPayload(e.Type)
	if p == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownEvent, e.Type)
	}
	if err := decodePayload(e.Payload, p); err != nil {
		return nil, fmt.Errorf("client: event %s: %w", e.Type, err)
	}
	return p, nil
}

// decodePayload decodes a payload that must be a JSON object.
func decodePayload(raw json.RawMessage, into any) error {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return errors.New("payload is not a JSON object")
	}
	return json.Unmarshal(raw, into)
}

// decodeAs decodes e's payload as T after checking that e has one of the wanted types.
func decodeAs[T any](e Event, want ...string) (*T, error) {
	ok := false
	for _, w := range want {
		ok = ok || e.Type == w
	}
	if !ok {
		return nil, fmt.Errorf("client: event is %q, not %q", e.Type, want)
	}
	v := new(T)
	if err := decodePayload(e.Payload, v); err != nil {
		return nil, fmt.Errorf("client: event %s: %w", e.Type, err)
	}
	return v, nil
}

// RFQCreated decodes an rfq.created payload.
func (e Event) RFQCreated() (*RFQ, error) { return decodeAs[RFQ](e, EventRFQCreated) }

// RFQClosed decodes an rfq.closed payload.
func (e Event) RFQClosed() (*RFQRef, error) { return decodeAs[RFQRef](e, EventRFQClosed) }

// RFQExpired decodes an rfq.expired payload.
func (e Event) RFQExpired() (*RFQRef, error) { return decodeAs[RFQRef](e, EventRFQExpired) }

// QuoteCreated decodes a quote.created payload.
func (e Event) QuoteCreated() (*Quote, error) { return decodeAs[Quote](e, EventQuoteCreated) }

// QuoteStatus decodes a quote.status payload.
func (e Event) QuoteStatus() (*QuoteStatus, error) {
	return decodeAs[QuoteStatus](e, EventQuoteStatus)
}

// QuoteAnchored decodes a quote.anchored payload.
func (e Event) QuoteAnchored() (*QuoteAnchored, error) {
	return decodeAs[QuoteAnchored](e, EventQuoteAnchored)
}

// TradeStep decodes a trade.step payload.
func (e Event) TradeStep() (*TradeStep, error) { return decodeAs[TradeStep](e, EventTradeStep) }

// TradeSettled decodes a trade.settled payload.
func (e Event) TradeSettled() (*Trade, error) { return decodeAs[Trade](e, EventTradeSettled) }

// TradeFailed decodes a trade.failed payload.
func (e Event) TradeFailed() (*TradeFailure, error) {
	return decodeAs[TradeFailure](e, EventTradeFailed)
}

// SignRequested decodes a sign.requested payload.
func (e Event) SignRequested() (*SignAction, error) {
	return decodeAs[SignAction](e, EventSignRequested)
}

// SignCompleted decodes a sign.completed payload.
func (e Event) SignCompleted() (*SignCompleted, error) {
	return decodeAs[SignCompleted](e, EventSignCompleted)
}

// HistoryRecorded decodes a history.recorded payload.
func (e Event) HistoryRecorded() (*RFQHistory, error) {
	return decodeAs[RFQHistory](e, EventHistoryRecorded)
}

// Resync decodes a resync payload.
func (e Event) Resync() (*Resync, error) { return decodeAs[Resync](e, EventResync) }

// Connected decodes the payload of the synthetic EventConnected marker.
func (e Event) Connected() (*Connected, error) { return decodeAs[Connected](e, EventConnected) }
