package machine

import (
	"bytes"
	"encoding/base64"
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
// A record is one JSON object per input, so a record stays readable by any JSON tool:
//
//	version 1: {"v":1,"seq":7,"at":"2026-03-01T12:00:00.5Z","kind":"rfq.create","input":{...}}
//	version 2: {"v":2,"seq":7,"at":"2026-03-01T12:00:00.5Z","kind":"rfq.create","bin":"<base64>"}
//
// Version 2 (written since) carries the input in its binary encoding (inputcodec.go), base64
// in "bin", and its checkpoints carry Desk.Digest; version 1 carried the input's JSON, and
// its checkpoints the state's JSON digest (Desk.LegacyDigest, Checkpoint.Scheme DigestJSON).
// DecodeEnvelope reads both. It parses the exact layout EncodeEnvelope writes in a single
// pass, and any other spelling of the same object with encoding/json.

// journalRecord is the generic JSON form of a record of either version.
type journalRecord struct {
	V     int             `json:"v"`
	Seq   uint64          `json:"seq"`
	At    time.Time       `json:"at"`
	Kind  string          `json:"kind"`
	Input json.RawMessage `json:"input,omitempty"` // version 1
	Bin   []byte          `json:"bin,omitempty"`   // version 2
}

// recordVersion is the version of the journal record encoding written by this desk.
const recordVersion = 2

// EncodeEnvelope renders an envelope as a self-describing journal record (version 2).
func EncodeEnvelope(env Envelope) ([]byte, error) {
	e := &encoder{B: make([]byte, 0, 256)}
	if err := encodeInput(e, env.Input); err != nil {
		return nil, fmt.Errorf("encode %s input: %w", env.Input.Kind(), err)
	}
	kind := env.Input.Kind()
	if !plainJSONString(kind) {
		return nil, fmt.Errorf("input kind %q cannot be journaled", kind)
	}
	out := make([]byte, 0, 96+len(kind)+base64.StdEncoding.EncodedLen(len(e.B)))
	out = append(out, `{"v":2,"seq":`...)
	out = strconv.AppendUint(out, env.Seq, 10)
	out = append(out, `,"at":"`...)
	out = env.At.AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","kind":"`...)
	out = append(out, kind...)
	out = append(out, `","bin":"`...)
	out = base64.StdEncoding.AppendEncode(out, e.B)
	return append(out, `"}`...), nil
}

// plainJSONString reports whether s needs no escaping inside a JSON string.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// DecodeEnvelope reads a journal record of any version this desk knows (1 and 2).
func DecodeEnvelope(b []byte) (Envelope, error) {
	if env, ok, err := decodeV2Fast(b); ok {
		return env, err
	}
	var rec journalRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return Envelope{}, fmt.Errorf("decode journal record: %w", err)
	}
	switch rec.V {
	case 1:
		return decodeV1(rec)
	case 2:
		in, err := decodeInput(wire.NewDecoder(rec.Bin), rec.Kind)
		if err != nil {
			return Envelope{}, err
		}
		return Envelope{Seq: rec.Seq, At: rec.At, Input: in}, nil
	}
	return Envelope{}, fmt.Errorf("journal record version %d is not one this desk reads (1..%d)", rec.V, recordVersion)
}

// decodeV1 decodes the JSON input of a version-1 record.
func decodeV1(rec journalRecord) (Envelope, error) {
	mk, ok := inputKinds[rec.Kind]
	if !ok {
		return Envelope{}, fmt.Errorf("unknown journal input kind %q", rec.Kind)
	}
	ptr := mk()
	if err := json.Unmarshal(rec.Input, ptr); err != nil {
		return Envelope{}, fmt.Errorf("decode %s input: %w", rec.Kind, err)
	}
	in := deref(ptr)
	if cp, ok := in.(Checkpoint); ok && cp.Scheme == "" {
		cp.Scheme = DigestJSON // version-1 desks digested the state's JSON
		in = cp
	}
	return Envelope{Seq: rec.Seq, At: rec.At, Input: in}, nil
}

// decodeV2Fast decodes a version-2 record in exactly the layout EncodeEnvelope writes. ok is
// false when b is not in that layout (it may still be a valid record of another spelling or
// version); then nothing was decided.
func decodeV2Fast(b []byte) (env Envelope, ok bool, err error) {
	rest, found := bytes.CutPrefix(b, []byte(`{"v":2,"seq":`))
	if !found {
		return Envelope{}, false, nil
	}
	i := 0
	for i < len(rest) && i < 20 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	seq, perr := strconv.ParseUint(string(rest[:i]), 10, 64)
	if perr != nil || (i > 1 && rest[0] == '0') {
		return Envelope{}, false, nil
	}
	rest, found = bytes.CutPrefix(rest[i:], []byte(`,"at":"`))
	if !found {
		return Envelope{}, false, nil
	}
	at, rest, found := cutQuoted(rest)
	if !found {
		return Envelope{}, false, nil
	}
	rest, found = bytes.CutPrefix(rest, []byte(`,"kind":"`))
	if !found {
		return Envelope{}, false, nil
	}
	kind, rest, found := cutQuoted(rest)
	if !found {
		return Envelope{}, false, nil
	}
	rest, found = bytes.CutPrefix(rest, []byte(`,"bin":"`))
	if !found {
		return Envelope{}, false, nil
	}
	bin, rest, found := cutQuoted(rest)
	if !found || string(rest) != "}" {
		return Envelope{}, false, nil
	}
	t, terr := time.Parse(time.RFC3339Nano, string(at))
	if terr != nil {
		return Envelope{}, false, nil
	}
	body := make([]byte, base64.StdEncoding.DecodedLen(len(bin)))
	n, berr := base64.StdEncoding.Decode(body, bin)
	if berr != nil {
		return Envelope{}, false, nil
	}
	in, err := decodeInput(wire.NewDecoder(body[:n]), string(kind))
	if err != nil {
		return Envelope{}, true, err
	}
	return Envelope{Seq: seq, At: t, Input: in}, true, nil
}

// cutQuoted returns the bytes up to the next '"' (which must not be escaped: the fast
// layout has no escapes) and what follows that quote.
func cutQuoted(b []byte) (in, rest []byte, ok bool) {
	j := bytes.IndexByte(b, '"')
	if j < 0 || bytes.IndexByte(b[:j], '\\') >= 0 {
		return nil, nil, false
	}
	return b[:j], b[j+1:], true
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
