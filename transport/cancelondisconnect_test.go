package transport

import "testing"

// TestStreamCancelOnDisconnectMark: ?cancelOnDisconnect=true reaches the desk as the
// socket's mark; false or no parameter opens an unmarked socket.
func TestStreamCancelOnDisconnectMark(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{{"", false}, {"?cancelOnDisconnect=true", true}, {"?cancelOnDisconnect=false", false}, {"?other=1&cancelOnDisconnect=true", true}} {
		got := openedWithQuery(t, tc.query).cod
		if got != tc.want {
			t.Errorf("%q: the desk got mark %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestStreamCancelOnDisconnectBadValue: any other value is 400 at the upgrade, with an
// error body naming the parameter; no socket opens and the desk hears nothing.
func TestStreamCancelOnDisconnectBadValue(t *testing.T) {
	refusesStreamQueries(t, "cancelOnDisconnect", []string{"cancelOnDisconnect=TRUE", "cancelOnDisconnect=1", "cancelOnDisconnect=", "cancelOnDisconnect",
		"cancelOnDisconnect=yes", "cancelOnDisconnect=true&cancelOnDisconnect=true"})
}
