package ledgersim

import (
	"fmt"
	"time"
)

// InputKind names a state-changing input.
type InputKind string

// The input kinds.
const (
	InputOnboard            InputKind = "onboard"
	InputCompleteOnboarding InputKind = "complete-onboarding"
	InputAllocateInternal   InputKind = "allocate-internal"
	InputPrepare            InputKind = "prepare"
	InputExecute            InputKind = "execute"
	InputSubmit             InputKind = "submit"
	InputDelist             InputKind = "delist"
	// InputTick is the passage of time alone: a call whose time expired prepared
	// transactions, onboardings or locks but that made no other change.
	InputTick InputKind = "tick"
)

// Input is one state-changing call as the ledger applied it: JSON-serializable, with a
// compact binary journal form (AppendBinary, DecodeInput; ENCODING.md), stamped
// with the time the ledger read from its clock, recorded after validation succeeded, in
// apply order. Replaying the inputs in order into a fresh ledger built from the same
// Config reaches the same state and Digest. Signatures are recorded for audit but not
// re-verified on replay. PreparedID, Hash and UpdateID are the results the ledger gave;
// replay checks it gives them again.
type Input struct {
	Kind       InputKind        `json:"kind"`
	At         time.Time        `json:"at"`
	Hint       string           `json:"hint,omitempty"`
	PublicKey  []byte           `json:"publicKey,omitempty"`
	PartyID    string           `json:"partyId,omitempty"`
	Signatures [][]byte         `json:"signatures,omitempty"`
	ActAs      string           `json:"actAs,omitempty"`
	CommandID  string           `json:"commandId,omitempty"`
	Command    *CommandEnvelope `json:"command,omitempty"`
	PreparedID string           `json:"preparedId,omitempty"`
	Hash       []byte           `json:"hash,omitempty"`
	Signature  []byte           `json:"signature,omitempty"`
	Instrument string           `json:"instrument,omitempty"`
	UpdateID   string           `json:"updateId,omitempty"`
	Listing    *Listing         `json:"listing,omitempty"`
}

// Replay applies a recorded input, without consulting the fault plan, verifying
// signatures or calling the Recorder. An error means the ledger diverged from the one
// that recorded the input (a different Config, or inputs missing or out of order).
func (l *Ledger) Replay(in Input) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if in.At.Before(l.now) {
		return newErr(CategoryInvalid, "replay", "input at %s is earlier than the ledger's time %s", in.At, l.now)
	}
	l.now = in.At
	err := l.replay(&in)
	if err != nil {
		return fmt.Errorf("ledgersim: replay %s input: %w", in.Kind, err)
	}
	return nil
}

func (l *Ledger) replay(in *Input) error {
	switch in.Kind {
	case InputTick:
		l.advance(in.At)
		return nil
	case InputOnboard:
		ob, err := l.applyOnboard(in, true)
		if err == nil && ob.PartyID != in.PartyID {
			return newErr(CategoryInternal, "replay", "onboarding diverged: %s vs recorded %s", ob.PartyID, in.PartyID)
		}
		return err
	case InputCompleteOnboarding:
		return l.applyComplete(in, true)
	case InputAllocateInternal:
		id, err := l.applyAllocateInternal(in, true)
		if err == nil && id != in.PartyID {
			return newErr(CategoryInternal, "replay", "internal party diverged: %s vs recorded %s", id, in.PartyID)
		}
		return err
	case InputPrepare, InputSubmit:
		cmd, err := in.Command.Command()
		if err != nil {
			return err
		}
		if cmd, err = normalizeCommand(cmd); err != nil {
			return err
		}
		if in.Kind == InputPrepare {
			_, err = l.applyPrepare(in, cmd, true)
		} else {
			_, err = l.applySubmit(in, cmd, true)
		}
		return err
	case InputExecute:
		_, err := l.applyExecute(in, true)
		return err
	case InputDelist:
		return l.applyDelist(in, true)
	case InputListInstrument:
		_, err := l.applyList(in, true)
		return err
	}
	return newErr(CategoryInvalid, "replay", "unknown input kind %q", in.Kind)
}
