package transport

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

// CORS (docs/api.md, "Browser access"). Closed by default: with no Options.CORSOrigins the
// desk sends no CORS header at all and answers OPTIONS as before (405). With origins
// named, a preflight OPTIONS from one of them for a method and path the API serves is
// answered 204 with the origin echoed, the methods, the request headers a client of the
// API sends and a max-age; an actual request from one of them gets the origin echoed and
// the response headers a client may read exposed. Everything else is untouched. The stream
// upgrade checks the Origin a browser sends against the same list (upgradeAllowed).
//
// A small explicit handler rather than a library (github.com/rs/cors): the policy is one
// list and three fixed header sets, and it must answer only the routes the router serves,
// leaving every other OPTIONS to the router's 405.

// CORSPreflightRoute labels preflight requests answered by the CORS policy in the metrics.
const CORSPreflightRoute = "CORS_PREFLIGHT"

// corsMaxAge is how long a browser may cache a preflight answer (Chromium caps it at 2 h).
const corsMaxAge = 10 * time.Minute

// Header sets of the CORS answers.
const (
	corsAllowMethods  = "GET, POST, PUT, DELETE"
	corsAllowHeaders  = "X-API-Key, Content-Type, Idempotency-Key"
	corsExposeHeaders = HeaderIdempotentReplayed + ", Retry-After, " + RequestIDHeader
)

// ValidateCORSOrigin checks that o is an origin as a browser sends it in the Origin header:
// "http" or "https", "://", a lowercase host, an optional non-default port, and nothing
// else (no path, not even "/", no query, no user, no wildcard). Any other form would never
// match, so it is refused rather than silently ignored.
func ValidateCORSOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil {
		return fmt.Errorf("CORS origin %q: %w", o, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("CORS origin %q: the scheme must be http or https", o)
	case u.Host == "" || u.Hostname() == "" || strings.Contains(u.Host, "*"):
		return fmt.Errorf("CORS origin %q: a host is required (no wildcard)", o)
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return fmt.Errorf("CORS origin %q: only scheme://host[:port], with no path, query, user or trailing slash", o)
	case strings.ToLower(o) != o:
		return fmt.Errorf("CORS origin %q: write it in lowercase, as browsers send it", o)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		switch {
		case err != nil || n < 1 || n > 65535:
			return fmt.Errorf("CORS origin %q: bad port", o)
		case (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443):
			return fmt.Errorf("CORS origin %q: leave out the default port, as browsers do", o)
		}
	}
	if u.Scheme+"://"+u.Host != o {
		return fmt.Errorf("CORS origin %q: only scheme://host[:port]", o)
	}
	return nil
}

// corsPolicy is the set of origins CORS is open to; empty is closed.
type corsPolicy struct{ origins []string }

// newCORSPolicy builds the policy of valid origins; an invalid one is an error.
func newCORSPolicy(origins []string) (corsPolicy, error) {
	for _, o := range origins {
		if err := ValidateCORSOrigin(o); err != nil {
			return corsPolicy{}, err
		}
	}
	return corsPolicy{origins: slices.Clone(origins)}, nil
}

// allowed reports whether CORS is open to the request's Origin.
func (c corsPolicy) allowed(origin string) bool {
	return origin != "" && slices.Contains(c.origins, origin)
}

// handle applies the policy before routing: it answers a preflight for a route of rt from
// an allowed origin (true: answered), and sets the headers of an actual request from one
// (false: route it). With no origins it does nothing.
func (c corsPolicy) handle(w http.ResponseWriter, r *http.Request, rt *httprouter.Router) bool {
	if len(c.origins) == 0 {
		return false
	}
	origin := r.Header.Get("Origin")
	h := w.Header()
	h.Add("Vary", "Origin")
	if !c.allowed(origin) {
		return false
	}
	if method := r.Header.Get("Access-Control-Request-Method"); r.Method == http.MethodOptions && method != "" {
		if handle, _, _ := rt.Lookup(method, r.URL.Path); handle == nil {
			return false // not a route of the API: the router answers as it does today
		}
		setRoute(w, CORSPreflightRoute)
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", strconv.Itoa(int(corsMaxAge/time.Second)))
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	return false
}

// upgradeAllowed checks a stream upgrade's Origin: with no origins configured, or no
// Origin sent (not a browser), or an Origin of the desk's own host, any; otherwise only an
// origin of the list.
func (c corsPolicy) upgradeAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if len(c.origins) == 0 || origin == "" || c.allowed(origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
