package machine

import (
	"encoding/json"
	"fmt"
	"github.com/deskco/rfqdesk/internal/wire"
	"strconv"
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
	CheckpointMark{}.Kind():   func() Input { return &CheckpointMark{} },
	CheckpointDigest{}.Kind(): func() Input { return &CheckpointDigest{} },
	Reconfigure{}.Kind():      func() Input { return &Reconfigure{} },
}

// Journal records.
//
// A desk record is binary, in the project's encoding primitives (internal/wire):
//
//	u8 recordVersion ‖ uvarint seq ‖ time at ‖ str kind ‖ the input's fields (inputcodec.go)
//
// Earlier desks wrote JSON records (version 1: the input's JSON; version 2: its binary form in
// base64 inside JSON) into journal segments of format version 1; no desk reads them any more
// (DecodeEnvelope names the version it was given). RecordJSON renders a record for a person.

// recordVersion is the version of the journal record encoding, the first byte of every desk
// record. Version 4 added the cancel-on-disconnect mark to socket.opened, version 5 its
// resume request (Resume, Since), version 6 its stream ticket hash (TicketHash), version 7
// the serialized prepared transaction, the ledger's end and the input holdings at the end of
// ledger.result (Prepared, Offset, Inputs: coinsel.go).
const recordVersion = 7

// recordVersion6 is read too: version 7 without the prepared transaction, the offset and
// the inputs in ledger.result (an older ledger answered a prepared id only, no offset, and
// the desk named no inputs). An older desk refuses version 7.
const recordVersion6 = 6

// recordVersion5 is read too: version 6 without the ticket hash in socket.opened (a socket
// of an older desk carried a key). An older desk refuses version 6.
const recordVersion5 = 5

// recordVersion4 is read too: version 5 without the resume request in socket.opened (a
// socket of an older desk asked for none). An older desk refuses version 5.
const recordVersion4 = 4

// recordVersion3 is the previous version, still read: version 4 without the mark in
// socket.opened (a socket of an older desk is unmarked). An older desk refuses version 4.
const recordVersion3 = 3

// EncodeEnvelope renders an envelope as a journal record (version recordVersion).
func EncodeEnvelope(env Envelope) ([]byte, error) {
	kind := env.Input.Kind()
	e := &encoder{B: make([]byte, 0, 64+len(kind))}
	e.U8(recordVersion)
	e.Uvarint(env.Seq)
	e.Time(env.At)
	e.Str(kind)
	if err := encodeInput(e, env.Input); err != nil {
		return nil, fmt.Errorf("encode %s input: %w", kind, err)
	}
	if err := e.Err(); err != nil {
		return nil, fmt.Errorf("encode %s record: %w", kind, err)
	}
	return e.B, nil
}

// DecodeEnvelope reads a journal record written by EncodeEnvelope, or by a desk of the
// previous record versions (recordVersion6, recordVersion5, recordVersion4, recordVersion3). A record of another version, such as the JSON
// records of earlier desks, is refused with an error naming it.
func DecodeEnvelope(b []byte) (Envelope, error) {
	if len(b) == 0 {
		return Envelope{}, fmt.Errorf("decode journal record: empty")
	}
	if b[0] != recordVersion && b[0] != recordVersion6 && b[0] != recordVersion5 && b[0] != recordVersion4 && b[0] != recordVersion3 {
		return Envelope{}, fmt.Errorf("journal record version %s; this desk reads only versions %d to %d", foreignVersion(b), recordVersion3, recordVersion)
	}
	d := wire.NewDecoder(b)
	d.Skip(1)
	seq := d.Uvarint()
	at := d.Time()
	kind := d.Str()
	if err := d.Err(); err != nil {
		return Envelope{}, fmt.Errorf("decode journal record: %w", err)
	}
	in, err := decodeInput(d, kind, b[0])
	if err != nil {
		return Envelope{}, err
	}
	return Envelope{Seq: seq, At: at, Input: in}, nil
}

// foreignVersion names the version of a record this desk does not read: the "v" of an
// earlier desk's JSON record, else the first byte.
func foreignVersion(b []byte) string {
	if b[0] == '{' {
		var rec struct {
			V int `json:"v"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.V > 0 {
			return fmt.Sprintf("%d (JSON, written by an earlier desk)", rec.V)
		}
		return "unknown (JSON)"
	}
	return strconv.Itoa(int(b[0]))
}

// RecordJSON renders a journal record for a person: {"seq":…,"at":…,"kind":…,"input":{…}}
// with the input in its JSON form (what cmd/replay -dump prints).
func RecordJSON(b []byte) (json.RawMessage, error) {
	env, err := DecodeEnvelope(b)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(struct {
		Seq   uint64    `json:"seq"`
		At    time.Time `json:"at"`
		Kind  string    `json:"kind"`
		Input Input     `json:"input"`
	}{env.Seq, env.At, env.Input.Kind(), env.Input})
	if err != nil {
		return nil, fmt.Errorf("render %s record: %w", env.Input.Kind(), err)
	}
	return out, nil
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
	case *CheckpointMark:
		return *v
	case *CheckpointDigest:
		return *v
	case *Reconfigure:
		return *v
	}
	return in
}
