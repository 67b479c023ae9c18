package transport

import (
	"net/http"

	"github.com/deskco/rfqdesk/machine"
)

// callWithSecret serves a command whose answer carries a secret the transport draws (an
// API key, a stream ticket): it draws the secret, sends the desk the command cmd makes of
// its hash (the secret itself never reaches the desk or a journal), and writes the answer
// with fill putting the secret into its body, a T (or *T). A failed draw or a body of
// another type is a bug: logged under what and answered 500.
func callWithSecret[T any](s *Server, w http.ResponseWriter, r *http.Request, what string,
	draw func() (string, error), cmd func(hash string) machine.Command_, fill func(body *T, secret string)) {
	secret, err := draw()
	if err != nil {
		s.log.Error(what, "err", err)
		s.writeError(w, r, http.StatusInternalServerError, "", "internal error")
		return
	}
	rep, ok := s.call(w, r, cmd(HashKey(secret)))
	if !ok {
		return
	}
	if rep.Err == nil {
		body, ok := machine.PayloadAs[T](rep.Body)
		if !ok {
			s.log.Error(what+": unexpected reply body", "type", typeName(rep.Body))
			s.writeError(w, r, http.StatusInternalServerError, "", "internal error")
			return
		}
		fill(&body, secret)
		rep.Body = body
	}
	s.writeReply(w, r, rep)
}
