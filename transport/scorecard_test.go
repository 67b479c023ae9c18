package transport

import (
	"testing"

	"github.com/deskco/rfqdesk/machine"
)

// TestScorecardWindowParam: no window asks the desk for the default one, a given window
// goes as given (the desk judges it), and one given twice or a malformed query is 400
// without reaching the desk beyond authentication.
func TestScorecardWindowParam(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"", machine.DefaultScoreWindow}, {"?window=1h", "1h"}, {"?window=7d", "7d"}, {"?window=", ""}, {"?window=2h", "2h"},
	} {
		d := newFakeDesk()
		_, ts := testServer(t, d, nil)
		if res := request(t, ts, "GET", "/maker/scorecard"+tc.query, "", "mk_alice", ""); res.status != 200 {
			t.Fatalf("%q: %d %s", tc.query, res.status, res.body)
		}
		var got []machine.QScorecard
		for _, r := range d.queries() {
			if q, ok := r.q.(machine.QScorecard); ok {
				got = append(got, q)
			}
		}
		if len(got) != 1 || got[0].Window != tc.want {
			t.Fatalf("%q: the desk was asked %+v, want window %q", tc.query, got, tc.want)
		}
	}
	for _, q := range []string{"?window=1h&window=24h", "?window=%zz"} {
		d := newFakeDesk()
		_, ts := testServer(t, d, nil)
		if res := request(t, ts, "GET", "/maker/scorecard"+q, "", "mk_alice", ""); res.status != 400 {
			t.Fatalf("%q: %d %s, want 400", q, res.status, res.body)
		}
		if n := d.beyondAuth(); n != 0 {
			t.Fatalf("%q: a refused request reached the desk %d times", q, n)
		}
	}
}
