package transport

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Console routes (docs/api.md, "Console"). With Options.Console set, GET and HEAD of "/"
// and of "/console/*file" are served by it; they were 404 before and no API path starts
// with "/console/", so no API answer changes. Without it they stay 404.

// consoleRoutes registers the console's paths on rt.
func (s *Server) consoleRoutes(rt *httprouter.Router) {
	for _, p := range []string{"/", "/console/*file"} {
		name := "GET " + p
		h := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			setRoute(w, name)
			s.opts.Console.ServeHTTP(w, r)
		}
		rt.Handle(http.MethodGet, p, h)
		rt.Handle(http.MethodHead, p, h)
	}
}
