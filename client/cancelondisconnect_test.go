package client

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/lxzan/gws"
)

// TestStreamCancelOnDisconnect: with StreamOptions.CancelOnDisconnect every upgrade, the
// reconnect included, asks for ?cancelOnDisconnect=true; without it none carries a query.
// The maker's quote.status frame decodes its reason.
func TestStreamCancelOnDisconnect(t *testing.T) {
	for _, cod := range []bool{true, false} {
		ss, c := newStreamServer(t, func(n int, s *gws.Conn) {
			if n == 1 {
				send(s, EventQuoteStatus, `{"quoteId":"q_1","rfqId":"rfq_1","status":"revoked","reason":"disconnect"}`)
				time.Sleep(10 * time.Millisecond)
				_ = s.NetConn().Close()
			}
		})
		opts := *fastBackoff
		opts.CancelOnDisconnect = cod
		s := c.Subscribe(context.Background(), &opts)
		wantConnected(t, next(t, s), false, 1)
		ev := next(t, s)
		var st QuoteStatus
		if p, err := ev.Decode(); err != nil {
			t.Fatalf("decode %s: %v", ev.Type, err)
		} else if q, ok := p.(*QuoteStatus); ok {
			st = *q
		}
		if st.Status != QuoteRevoked || st.Reason != "disconnect" {
			t.Fatalf("quote.status decoded as %+v", st)
		}
		wantConnected(t, next(t, s), true, 2)
		s.Close()
		want := []string{"", ""}
		if cod {
			want = []string{"cancelOnDisconnect=true", "cancelOnDisconnect=true"}
		}
		ss.mu.Lock()
		got := append([]string(nil), ss.query...)
		ss.mu.Unlock()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("CancelOnDisconnect %v: upgrade queries %q, want %q", cod, got, want)
		}
	}
}
