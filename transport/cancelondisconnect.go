package transport

import (
	"fmt"
	"net/http"
)

// cancelOnDisconnectParam is the stream upgrade's query parameter that marks the socket
// for cancel-on-disconnect (docs/api.md): when the party goes offline with a marked
// socket among those that closed, the desk revokes its live quotes.
const cancelOnDisconnectParam = "cancelOnDisconnect"

// cancelOnDisconnect reads ?cancelOnDisconnect= of a stream upgrade: absent or "false" is
// unmarked, "true" marked; anything else (another spelling, an empty value, the parameter
// given twice) is an error, answered 400 before the socket opens, so that a client that
// asked for the protection never runs without it.
func cancelOnDisconnect(r *http.Request) (bool, error) {
	vals, ok := r.URL.Query()[cancelOnDisconnectParam]
	if !ok {
		return false, nil
	}
	if len(vals) != 1 {
		return false, fmt.Errorf("%s given %d times; give it once, true or false", cancelOnDisconnectParam, len(vals))
	}
	switch vals[0] {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s must be true or false, not %q", cancelOnDisconnectParam, vals[0])
}
