package ledgeradapter

import (
	"context"

	"github.com/deskco/rfqdesk/ledgersim"
	"github.com/deskco/rfqdesk/machine"
)

// InFlight is an execute the ledger holds in flight (ledgersim's Flight): sequenced, its
// inputs locked, not committed yet. Finish commits it; Abandon drops it (the process that
// sent it is gone).
type InFlight struct {
	a     *Adapter
	call  machine.LedgerCall
	since int64
	known bool
	f     *ledgersim.Flight
}

// Begin starts a call. An execute on a ledger with a sequencing delay
// (ledgersim.Config.SequencingDelay) is put in flight and returned, for the caller to
// Finish once the delay passed (a simulation does so on its virtual clock); every other
// call, and an execute refused at once, is answered as Do answers it, with a nil InFlight.
// An execute in flight is one attempt: the desk's own retry covers a transient refusal.
func (a *Adapter) Begin(ctx context.Context, call machine.LedgerCall) (*InFlight, machine.LedgerResult) {
	if call.Op != machine.OpExecute || a.L.Config().SequencingDelay <= 0 {
		return nil, a.Do(ctx, call)
	}
	since, known := a.noteSince(call)
	f, err := a.L.BeginExecute(call.Prepared, call.Signature)
	if err != nil {
		return nil, a.flightRefused(call, since, known, err)
	}
	return &InFlight{a: a, call: call, since: since, known: known, f: f}, machine.LedgerResult{}
}

// Finish commits the execute and answers it as Do would.
func (p *InFlight) Finish() machine.LedgerResult {
	u, err := p.f.Commit()
	if err != nil {
		return p.a.flightRefused(p.call, p.since, p.known, err)
	}
	res := machine.LedgerResult{CommandID: p.call.CommandID}
	fill(&res, u)
	res.Offset = p.a.L.Offset()
	return res
}

// Abandon drops the execute without committing it.
func (p *InFlight) Abandon() { p.f.Abandon() }

// Call is the call in flight.
func (p *InFlight) Call() machine.LedgerCall { return p.call }

// flightRefused answers an execute in flight the ledger refused: with the update of an earlier attempt
// that took effect, found in the completion stream, or with the refusal.
func (a *Adapter) flightRefused(call machine.LedgerCall, since int64, known bool, err error) machine.LedgerResult {
	res := machine.LedgerResult{CommandID: call.CommandID}
	if u, ok := a.tookEffect(call, since, known, err); ok {
		fill(&res, u)
		res.Offset = a.L.Offset()
		return res
	}
	res.Failure = failure(err)
	if sf, ok := ledgersim.ShortfallOf(err); ok {
		res.Failure.Message = a.shortfallText(sf)
	}
	return res
}
