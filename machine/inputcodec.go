package machine

import (
	"encoding/json"
	"fmt"
)

// Binary encodings of the journaled inputs, the body of a version-2 journal record
// (codec.go). Fields are written in declaration order with the primitives of bincodec.go;
// the record's kind says which encoding follows.

// encodeInput appends the binary body of an input.
func encodeInput(e *encoder, in Input) error {
	switch v := in.(type) {
	case Tick, Boot:
	case SocketOpened:
		e.uvarint(v.Socket)
		e.str(v.KeyHash)
	case SocketClosed:
		e.uvarint(v.Socket)
	case LedgerResult:
		e.str(v.CommandID)
		e.present(v.Failure != nil)
		if v.Failure != nil {
			e.str(v.Failure.Category)
			e.str(v.Failure.Message)
		}
		e.str(v.PartyID)
		e.topology(v.Topology)
		e.str(v.PreparedID)
		e.bytes(v.Hash)
		e.time(v.ExpiresAt)
		e.str(v.UpdateID)
		e.str(v.AllocationCID)
		e.str(v.InstructionCID)
		e.strs(v.Receipts)
	case RegisterStart:
		e.str(v.KeyHash)
		e.str(v.DisplayName)
		e.bytes(v.PublicKey)
	case RegisterComplete:
		e.str(v.KeyHash)
		e.str(v.RegistrationID)
		e.byteSlices(v.Signatures)
		e.str(v.NewKeyHash)
	case ChallengeRequest:
		e.str(v.KeyHash)
		e.str(v.PartyID)
		e.str(v.Challenge)
	case RotateKey:
		e.str(v.KeyHash)
		e.str(v.PartyID)
		e.str(v.Challenge)
		e.bytes(v.Signature)
		e.str(v.NewKeyHash)
	case Preapproval:
		e.str(v.KeyHash)
	case CreateRFQ:
		e.str(v.KeyHash)
		e.str(string(v.Direction))
		e.dec(v.Qty)
		e.str(v.Base)
		e.str(v.Quote)
		e.strs(v.InvitedMakers)
		e.varint(v.TTLSeconds)
	case CancelRFQ:
		e.str(v.KeyHash)
		e.str(v.RFQID)
	case SubmitQuote:
		e.str(v.KeyHash)
		e.str(v.RFQID)
		e.dec(v.Price)
		e.present(v.ValidUntil != nil)
		if v.ValidUntil != nil {
			e.time(*v.ValidUntil)
		}
	case DeleteQuote:
		e.str(v.KeyHash)
		e.str(v.QuoteID)
	case AcceptQuote:
		e.str(v.KeyHash)
		e.str(v.QuoteID)
	case ExecuteActions:
		e.str(v.KeyHash)
		e.length(len(v.Entries), v.Entries == nil)
		for _, x := range v.Entries {
			e.str(x.ActionID)
			e.bytes(x.Signature)
		}
		e.bool(v.Batch)
	case AcceptIncoming:
		e.str(v.KeyHash)
		e.str(v.CID)
	case Withdraw:
		e.str(v.KeyHash)
		e.str(v.Symbol)
		e.dec(v.Amount)
		e.str(v.Receiver)
	case FaucetDraw:
		e.str(v.KeyHash)
	case Checkpoint:
		e.str(v.Digest)
		e.str(v.Scheme)
	case CheckpointMark:
	case CheckpointDigest:
		e.uvarint(v.Mark)
		e.str(v.Digest)
	case Reconfigure:
		// The configuration as the snapshot carries it (its JSON), so both read it alike.
		cfg, err := json.Marshal(v.Config)
		if err != nil {
			return fmt.Errorf("encode the configuration: %w", err)
		}
		e.bytes(cfg)
	default:
		return fmt.Errorf("input kind %q has no binary encoding", in.Kind())
	}
	return e.err
}

// decodeInput reads the binary body of an input of the given kind.
func decodeInput(d *decoder, kind string) (Input, error) {
	var in Input
	switch kind {
	case Tick{}.Kind():
		in = Tick{}
	case Boot{}.Kind():
		in = Boot{}
	case SocketOpened{}.Kind():
		in = SocketOpened{Socket: d.uvarint(), KeyHash: d.str()}
	case SocketClosed{}.Kind():
		in = SocketClosed{Socket: d.uvarint()}
	case LedgerResult{}.Kind():
		r := LedgerResult{CommandID: d.str()}
		if d.present() {
			r.Failure = &LedgerFailure{Category: d.str(), Message: d.str()}
		}
		r.PartyID, r.Topology, r.PreparedID, r.Hash = d.str(), d.topology(), d.str(), d.bytes()
		r.ExpiresAt, r.UpdateID, r.AllocationCID, r.InstructionCID = d.time(), d.str(), d.str(), d.str()
		r.Receipts = d.strs()
		in = r
	case RegisterStart{}.Kind():
		in = RegisterStart{Req: Req{KeyHash: d.str()}, DisplayName: d.str(), PublicKey: d.bytes()}
	case RegisterComplete{}.Kind():
		in = RegisterComplete{Req: Req{KeyHash: d.str()}, RegistrationID: d.str(), Signatures: d.byteSlices(), NewKeyHash: d.str()}
	case ChallengeRequest{}.Kind():
		in = ChallengeRequest{Req: Req{KeyHash: d.str()}, PartyID: d.str(), Challenge: d.str()}
	case RotateKey{}.Kind():
		in = RotateKey{Req: Req{KeyHash: d.str()}, PartyID: d.str(), Challenge: d.str(), Signature: d.bytes(), NewKeyHash: d.str()}
	case Preapproval{}.Kind():
		in = Preapproval{Req: Req{KeyHash: d.str()}}
	case CreateRFQ{}.Kind():
		in = CreateRFQ{Req: Req{KeyHash: d.str()}, Direction: Direction(d.str()), Qty: d.dec(), Base: d.str(), Quote: d.str(),
			InvitedMakers: d.strs(), TTLSeconds: d.varint()}
	case CancelRFQ{}.Kind():
		in = CancelRFQ{Req: Req{KeyHash: d.str()}, RFQID: d.str()}
	case SubmitQuote{}.Kind():
		q := SubmitQuote{Req: Req{KeyHash: d.str()}, RFQID: d.str(), Price: d.dec()}
		if d.present() {
			t := d.time()
			q.ValidUntil = &t
		}
		in = q
	case DeleteQuote{}.Kind():
		in = DeleteQuote{Req: Req{KeyHash: d.str()}, QuoteID: d.str()}
	case AcceptQuote{}.Kind():
		in = AcceptQuote{Req: Req{KeyHash: d.str()}, QuoteID: d.str()}
	case ExecuteActions{}.Kind():
		x := ExecuteActions{Req: Req{KeyHash: d.str()}}
		if n, isNil := d.length(); !isNil {
			x.Entries = make([]SignedAction, n)
			for i := range x.Entries {
				x.Entries[i] = SignedAction{ActionID: d.str(), Signature: d.bytes()}
			}
		}
		x.Batch = d.bool()
		in = x
	case AcceptIncoming{}.Kind():
		in = AcceptIncoming{Req: Req{KeyHash: d.str()}, CID: d.str()}
	case Withdraw{}.Kind():
		in = Withdraw{Req: Req{KeyHash: d.str()}, Symbol: d.str(), Amount: d.dec(), Receiver: d.str()}
	case FaucetDraw{}.Kind():
		in = FaucetDraw{Req: Req{KeyHash: d.str()}}
	case Checkpoint{}.Kind():
		in = Checkpoint{Digest: d.str(), Scheme: d.str()}
	case CheckpointMark{}.Kind():
		in = CheckpointMark{}
	case CheckpointDigest{}.Kind():
		in = CheckpointDigest{Mark: d.uvarint(), Digest: d.str()}
	case Reconfigure{}.Kind():
		var r Reconfigure
		if cfg := d.bytes(); d.err == nil {
			if err := json.Unmarshal(cfg, &r.Config); err != nil {
				return nil, fmt.Errorf("decode %s input: %w", kind, err)
			}
		}
		in = r
	default:
		return nil, fmt.Errorf("unknown journal input kind %q", kind)
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode %s input: %w", kind, d.err)
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("decode %s input: %d bytes after it", kind, len(d.b)-d.off)
	}
	return in, nil
}
