package transport

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/deskco/rfqdesk/machine"
)

// scorecardWindowParam is GET /maker/scorecard's query parameter naming the window.
const scorecardWindowParam = "window"

// scorecard is GET /maker/scorecard?window=1h|24h|7d: the caller's own scorecard. An absent
// window is machine.DefaultScoreWindow; any other value, an empty one included, goes to the
// desk as given, which answers 400 for one it does not know.
func (s *Server) scorecard(w http.ResponseWriter, r *http.Request, _ httprouter.Params, keyHash string) {
	q, werr := parseQuery(r)
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	window, present, werr := single(q, scorecardWindowParam)
	if werr != nil {
		s.writeWire(w, r, werr)
		return
	}
	if !present {
		window = machine.DefaultScoreWindow
	}
	s.read(w, r, keyHash, machine.QScorecard{Window: window})
}
