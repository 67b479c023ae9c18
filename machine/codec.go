package machine

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// inputKinds maps every journaled input kind to a constructor of its zero value.
var inputKinds = map[string]func() Input{
	Tick{}.Kind():             func() Input { return &Tick{} },
	Boot{}.Kind():             func() Input { return &Boot{} },
	SocketOpened{}.Kind():     func() Input { return &SocketOpened{} },
	SocketClosed{}.Kind():     func() Input { return &SocketClosed{} },
	LedgerResult{}.Kind():     func() Input { return &LedgerResult{} },
	RegisterStart{}.Kind():    func() Input { return &RegisterStart{} },
	RegisterComplete{}.Kind(): func() Input { return &RegisterComplete{} },
	ChallengeRequest{}.Kind(): func() Input { return &ChallengeRequest{} },
	RotateKey{}.Kind():        func() Input { return &RotateKey{} },
	Preapproval{}.Kind():      func() Input { return &Preapproval{} },
	CreateRFQ{}.Kind():        func() Input { return &CreateRFQ{} },
	CancelRFQ{}.Kind():        func() Input { return &CancelRFQ{} },
	SubmitQuote{}.Kind():      func() Input { return &SubmitQuote{} },
	DeleteQuote{}.Kind():      func() Input { return &DeleteQuote{} },
	AcceptQuote{}.Kind():      func() Input { return &AcceptQuote{} },
	ExecuteActions{}.Kind():   func() Input { return &ExecuteActions{} },
	AcceptIncoming{}.Kind():   func() Input { return &AcceptIncoming{} },
	Withdraw{}.Kind():         func() Input { return &Withdraw{} },
	FaucetDraw{}.Kind():       func() Input { return &FaucetDraw{} },
	Checkpoint{}.Kind():       func() Input { return &Checkpoint{} },
}

// journalRecord is the journaled form of an envelope.
type journalRecord struct {
	V     int             `json:"v"`
	Seq   uint64          `json:"seq"`
	At    time.Time       `json:"at"`
	Kind  string          `json:"kind"`
	Input json.RawMessage `json:"input"`
}

// recordVersion is the version of the journal record encoding written by this desk.
const recordVersion = 1

// EncodeEnvelope renders an envelope as a self-describing journal record.
func EncodeEnvelope(env Envelope) ([]byte, error) {
	body, err := json.Marshal(env.Input)
	if err != nil {
		return nil, fmt.Errorf("encode %s input: %w", env.Input.Kind(), err)
	}
	return json.Marshal(journalRecord{V: recordVersion, Seq: env.Seq, At: env.At, Kind: env.Input.Kind(), Input: body})
}

// DecodeEnvelope reads a journal record written by EncodeEnvelope.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var rec journalRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return Envelope{}, fmt.Errorf("decode journal record: %w", err)
	}
	if rec.V < 1 || rec.V > recordVersion {
		return Envelope{}, fmt.Errorf("journal record version %d is not one this desk reads (1..%d)", rec.V, recordVersion)
	}
	mk, ok := inputKinds[rec.Kind]
	if !ok {
		return Envelope{}, fmt.Errorf("unknown journal input kind %q", rec.Kind)
	}
	ptr := mk()
	if err := json.Unmarshal(rec.Input, ptr); err != nil {
		return Envelope{}, fmt.Errorf("decode %s input: %w", rec.Kind, err)
	}
	return Envelope{Seq: rec.Seq, At: rec.At, Input: deref(ptr)}, nil
}

// deref turns the pointer a constructor made back into the value type Apply switches on.
func deref(in Input) Input {
	switch v := in.(type) {
	case *Tick:
		return *v
	case *Boot:
		return *v
	case *SocketOpened:
		return *v
	case *SocketClosed:
		return *v
	case *LedgerResult:
		return *v
	case *RegisterStart:
		return *v
	case *RegisterComplete:
		return *v
	case *ChallengeRequest:
		return *v
	case *RotateKey:
		return *v
	case *Preapproval:
		return *v
	case *CreateRFQ:
		return *v
	case *CancelRFQ:
		return *v
	case *SubmitQuote:
		return *v
	case *DeleteQuote:
		return *v
	case *AcceptQuote:
		return *v
	case *ExecuteActions:
		return *v
	case *AcceptIncoming:
		return *v
	case *Withdraw:
		return *v
	case *FaucetDraw:
		return *v
	case *Checkpoint:
		return *v
	}
	return in
}

// Digest is the SHA-256 of the desk's whole state in its canonical JSON form (encoding/json
// sorts map keys), so two desks that applied the same inputs have the same digest.
func (d *Desk) Digest() ([32]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return [32]byte{}, fmt.Errorf("encode desk state: %w", err)
	}
	return sha256.Sum256(b), nil
}

// Restore rebuilds a desk from the JSON a snapshot saved (json.Marshal of a Desk).
func Restore(b []byte) (*Desk, error) {
	d := &Desk{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("decode desk snapshot: %w", err)
	}
	if err := d.Cfg.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot configuration: %w", err)
	}
	return d, nil
}
