package client

import (
	"context"
	"testing"

	"github.com/lxzan/gws"
)

// TestStreamDeliversQuoteDeclined: a quote.declined frame reaches the consumer and decodes,
// through Decode and through QuoteDeclined; before, the client skipped it as unknown.
func TestStreamDeliversQuoteDeclined(t *testing.T) {
	_, c := newStreamServer(t, func(n int, s *gws.Conn) {
		send(s, EventQuoteDeclined, `{"rfqId":"rfq_1","maker":"bot-abc","reason":"size"}`)
	})
	s := c.Subscribe(context.Background(), nil)
	defer s.Close()
	wantConnected(t, next(t, s), false, 1)
	ev := next(t, s)
	want := QuoteDeclined{RFQID: "rfq_1", Maker: "bot-abc", Reason: "size"}
	if d, err := ev.QuoteDeclined(); err != nil || *d != want {
		t.Fatalf("QuoteDeclined: %+v %v", d, err)
	}
	if p, err := ev.Decode(); err != nil || *p.(*QuoteDeclined) != want {
		t.Fatalf("Decode: %+v %v", p, err)
	}
	if st := s.Stats(); st.Unknown != 0 {
		t.Fatalf("%d unknown frames", st.Unknown)
	}
}
