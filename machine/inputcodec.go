package machine

import (
	"encoding/json"
	"fmt"
	"github.com/deskco/rfqdesk/money"
)

// Binary encodings of the journaled inputs, the body of a journal record
// (codec.go). Fields are written in declaration order with the primitives of internal/wire;
// the record's kind says which encoding follows.

// encodeInput appends the binary body of an input.
func encodeInput(e *encoder, in Input) error {
	switch v := in.(type) {
	case Tick, Boot:
	case SocketOpened:
		e.Uvarint(v.Socket)
		e.Str(v.KeyHash)
		e.Bool(v.CancelOnDisconnect) // since record version 4
		e.Bool(v.Resume)             // since record version 5
		e.Uvarint(v.Since)
		e.Str(v.TicketHash) // since record version 6
	case SocketClosed:
		e.Uvarint(v.Socket)
	case LedgerResult:
		e.Str(v.CommandID)
		e.Bool(v.Failure != nil)
		if v.Failure != nil {
			e.Str(v.Failure.Category)
			e.Str(v.Failure.Message)
		}
		e.Str(v.PartyID)
		writeTopology(e, v.Topology)
		e.Str(v.PreparedID)
		e.Bytes(v.Hash)
		e.Time(v.ExpiresAt)
		e.Str(v.UpdateID)
		e.Str(v.AllocationCID)
		e.Str(v.InstructionCID)
		e.Strs(v.Receipts)
		e.Bytes(v.Prepared) // since record version 7
		e.Varint(v.Offset)
		e.Strs(v.Inputs)
	case RegisterStart:
		e.Str(v.KeyHash)
		e.Str(v.DisplayName)
		e.Bytes(v.PublicKey)
	case RegisterComplete:
		e.Str(v.KeyHash)
		e.Str(v.RegistrationID)
		e.ByteSlices(v.Signatures)
		e.Str(v.NewKeyHash)
	case ChallengeRequest:
		e.Str(v.KeyHash)
		e.Str(v.PartyID)
		e.Str(v.Challenge)
	case RotateKey:
		e.Str(v.KeyHash)
		e.Str(v.PartyID)
		e.Str(v.Challenge)
		e.Bytes(v.Signature)
		e.Str(v.NewKeyHash)
	case Preapproval:
		e.Str(v.KeyHash)
	case CreateRFQ:
		e.Str(v.KeyHash)
		e.Str(string(v.Direction))
		v.Qty.Encode(e)
		e.Str(v.Base)
		e.Str(v.Quote)
		e.Strs(v.InvitedMakers)
		e.Varint(v.TTLSeconds)
	case CancelRFQ:
		e.Str(v.KeyHash)
		e.Str(v.RFQID)
	case SubmitQuote:
		e.Str(v.KeyHash)
		e.Str(v.RFQID)
		v.Price.Encode(e)
		e.Bool(v.ValidUntil != nil)
		if v.ValidUntil != nil {
			e.Time(*v.ValidUntil)
		}
	case DeleteQuote:
		e.Str(v.KeyHash)
		e.Str(v.QuoteID)
	case AcceptQuote:
		e.Str(v.KeyHash)
		e.Str(v.QuoteID)
	case ExecuteActions:
		e.Str(v.KeyHash)
		e.Len(len(v.Entries), v.Entries == nil)
		for _, x := range v.Entries {
			e.Str(x.ActionID)
			e.Bytes(x.Signature)
		}
		e.Bool(v.Batch)
	case AcceptIncoming:
		e.Str(v.KeyHash)
		e.Str(v.CID)
	case Withdraw:
		e.Str(v.KeyHash)
		e.Str(v.Symbol)
		v.Amount.Encode(e)
		e.Str(v.Receiver)
	case FaucetDraw:
		e.Str(v.KeyHash)
	case Checkpoint:
		e.Str(v.Digest)
	case CheckpointMark:
	case CheckpointDigest:
		e.Uvarint(v.Mark)
		e.Str(v.Digest)
	case Reconfigure:
		// The configuration as the snapshot carries it (its JSON), so both read it alike.
		cfg, err := json.Marshal(v.Config)
		if err != nil {
			return fmt.Errorf("encode the configuration: %w", err)
		}
		e.Bytes(cfg)
	case Idempotent:
		return encodeIdempotent(e, v)
	case flow:
		v.encodeBody(e)
	default:
		return fmt.Errorf("input kind %q has no binary encoding", in.Kind())
	}
	return e.Err()
}

// decodeInput reads the binary body of an input of the given kind from a record of the
// given version (recordVersion, recordVersion6, recordVersion5, recordVersion4 or recordVersion3).
func decodeInput(d *decoder, kind string, version byte) (Input, error) {
	var in Input
	switch kind {
	case Tick{}.Kind():
		in = Tick{}
	case Boot{}.Kind():
		in = Boot{}
	case SocketOpened{}.Kind():
		o := SocketOpened{Socket: d.Uvarint(), KeyHash: d.Str()}
		if version != recordVersion3 {
			o.CancelOnDisconnect = d.Bool()
		}
		if version != recordVersion3 && version != recordVersion4 {
			o.Resume, o.Since = d.Bool(), d.Uvarint()
		}
		if version == recordVersion || version == recordVersion6 {
			o.TicketHash = d.Str()
		}
		in = o
	case SocketClosed{}.Kind():
		in = SocketClosed{Socket: d.Uvarint()}
	case LedgerResult{}.Kind():
		r := LedgerResult{CommandID: d.Str()}
		if d.Bool() {
			r.Failure = &LedgerFailure{Category: d.Str(), Message: d.Str()}
		}
		r.PartyID, r.Topology, r.PreparedID, r.Hash = d.Str(), readTopology(d), d.Str(), d.Bytes()
		r.ExpiresAt, r.UpdateID, r.AllocationCID, r.InstructionCID = d.Time(), d.Str(), d.Str(), d.Str()
		r.Receipts = d.Strs()
		if version == recordVersion {
			r.Prepared, r.Offset = d.Bytes(), d.Varint()
			r.Inputs = d.Strs()
		}
		in = r
	case RegisterStart{}.Kind():
		in = RegisterStart{Req: Req{KeyHash: d.Str()}, DisplayName: d.Str(), PublicKey: d.Bytes()}
	case RegisterComplete{}.Kind():
		in = RegisterComplete{Req: Req{KeyHash: d.Str()}, RegistrationID: d.Str(), Signatures: d.ByteSlices(), NewKeyHash: d.Str()}
	case ChallengeRequest{}.Kind():
		in = ChallengeRequest{Req: Req{KeyHash: d.Str()}, PartyID: d.Str(), Challenge: d.Str()}
	case RotateKey{}.Kind():
		in = RotateKey{Req: Req{KeyHash: d.Str()}, PartyID: d.Str(), Challenge: d.Str(), Signature: d.Bytes(), NewKeyHash: d.Str()}
	case Preapproval{}.Kind():
		in = Preapproval{Req: Req{KeyHash: d.Str()}}
	case CreateRFQ{}.Kind():
		in = CreateRFQ{Req: Req{KeyHash: d.Str()}, Direction: Direction(d.Str()), Qty: money.ReadDecimal(d), Base: d.Str(), Quote: d.Str(),
			InvitedMakers: d.Strs(), TTLSeconds: d.Varint()}
	case CancelRFQ{}.Kind():
		in = CancelRFQ{Req: Req{KeyHash: d.Str()}, RFQID: d.Str()}
	case SubmitQuote{}.Kind():
		q := SubmitQuote{Req: Req{KeyHash: d.Str()}, RFQID: d.Str(), Price: money.ReadDecimal(d)}
		if d.Bool() {
			t := d.Time()
			q.ValidUntil = &t
		}
		in = q
	case DeleteQuote{}.Kind():
		in = DeleteQuote{Req: Req{KeyHash: d.Str()}, QuoteID: d.Str()}
	case AcceptQuote{}.Kind():
		in = AcceptQuote{Req: Req{KeyHash: d.Str()}, QuoteID: d.Str()}
	case ExecuteActions{}.Kind():
		x := ExecuteActions{Req: Req{KeyHash: d.Str()}}
		if n, isNil := d.Len(); !isNil {
			x.Entries = make([]SignedAction, n)
			for i := range x.Entries {
				x.Entries[i] = SignedAction{ActionID: d.Str(), Signature: d.Bytes()}
			}
		}
		x.Batch = d.Bool()
		in = x
	case AcceptIncoming{}.Kind():
		in = AcceptIncoming{Req: Req{KeyHash: d.Str()}, CID: d.Str()}
	case Withdraw{}.Kind():
		in = Withdraw{Req: Req{KeyHash: d.Str()}, Symbol: d.Str(), Amount: money.ReadDecimal(d), Receiver: d.Str()}
	case FaucetDraw{}.Kind():
		in = FaucetDraw{Req: Req{KeyHash: d.Str()}}
	case Checkpoint{}.Kind():
		in = Checkpoint{Digest: d.Str()}
	case CheckpointMark{}.Kind():
		in = CheckpointMark{}
	case CheckpointDigest{}.Kind():
		in = CheckpointDigest{Mark: d.Uvarint(), Digest: d.Str()}
	case Reconfigure{}.Kind():
		var r Reconfigure
		if cfg := d.Bytes(); d.Err() == nil {
			if err := json.Unmarshal(cfg, &r.Config); err != nil {
				return nil, fmt.Errorf("decode %s input: %w", kind, err)
			}
		}
		in = r
	case Idempotent{}.Kind():
		return decodeIdempotent(d, version)
	default:
		f, ok := flows[kind]
		if !ok {
			return nil, fmt.Errorf("unknown journal input kind %q", kind)
		}
		in = f.decodeBody(d)
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("decode %s input: %w", kind, d.Err())
	}
	if d.Left() != 0 {
		return nil, fmt.Errorf("decode %s input: %d bytes after it", kind, d.Left())
	}
	return in, nil
}
