package transport

import (
	"net/http"
	"strings"
)

// Console (docs/api.md, "Console"). With Options.Console set, GET and HEAD of "/" and of
// any path under "/console/" go to it, before CORS and the router. Those paths were 404
// before and no API path starts with "/console/"; every other method on them still reaches
// the router (404, as before), so a client of the API sees no change. Without it they stay
// 404. The console's answers are counted and logged under the routes ConsoleRoute and
// ConsoleFilesRoute.

// Route labels of the console's answers in the metrics.
const (
	ConsoleRoute      = "GET /"
	ConsoleFilesRoute = "GET /console/*file"
)

// console serves r from the console handler when it is a console read, and reports
// whether it did.
func (s *Server) console(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Console == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	switch {
	case r.URL.Path == "/":
		setRoute(w, ConsoleRoute)
	case strings.HasPrefix(r.URL.Path, "/console/"):
		setRoute(w, ConsoleFilesRoute)
	default:
		return false
	}
	s.opts.Console.ServeHTTP(w, r)
	return true
}
