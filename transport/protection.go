package transport

import (
	"net/http"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/julienschmidt/httprouter"
)

// Maker protection (docs/api.md, "Maker protection"): PUT /maker/protection sets the
// caller's settings, GET reads them with the freeze and the window's counts, POST
// /maker/protection/reset ends a freeze. The desk decides (machine/maker_protection.go);
// the transport checks the body's syntax and bounds.

// qProtection is GET /maker/protection.
var qProtection = func() machine.Query { return machine.QProtection{} }

// resetProtection is POST /maker/protection/reset.
var resetProtection = func(rq machine.Req) machine.Command_ { return machine.ResetProtection{Req: rq} }

// setProtection is PUT /maker/protection {windowSeconds, maxFills, maxNotionalUsd,
// freezeSeconds}: every field required, the three counts JSON integers, maxNotionalUsd a
// decimal string; out of bounds is 400 (machine.CheckProtection).
func (s *Server) setProtection(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	var in struct {
		WindowSeconds  *int64         `json:"windowSeconds"`
		MaxFills       *int64         `json:"maxFills"`
		MaxNotionalUSD *money.Decimal `json:"maxNotionalUsd"`
		FreezeSeconds  *int64         `json:"freezeSeconds"`
	}
	if !s.body(w, r, &in) {
		return
	}
	var werr *wireError
	switch {
	case in.WindowSeconds == nil:
		werr = badRequest("windowSeconds is required")
	case in.MaxFills == nil:
		werr = badRequest("maxFills is required")
	case in.MaxNotionalUSD == nil:
		werr = badRequest("maxNotionalUsd is required")
	case in.FreezeSeconds == nil:
		werr = badRequest("freezeSeconds is required")
	}
	if werr == nil {
		if err := machine.CheckProtection(clampInt(*in.WindowSeconds), clampInt(*in.MaxFills), *in.MaxNotionalUSD, clampInt(*in.FreezeSeconds)); err != nil {
			werr = badRequest("%s", err.Error())
		}
	}
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	s.do(w, r, machine.SetProtection{
		Req: machine.Req{KeyHash: keyHash}, WindowSeconds: int(*in.WindowSeconds), MaxFills: int(*in.MaxFills),
		MaxNotionalUSD: *in.MaxNotionalUSD, FreezeSeconds: int(*in.FreezeSeconds),
	})
}

// clampInt narrows a JSON integer to an int for the bounds check: a value past int's range
// is out of every bound anyway (-1 stands for it).
func clampInt(v int64) int {
	if int64(int(v)) != v {
		return -1
	}
	return int(v)
}
