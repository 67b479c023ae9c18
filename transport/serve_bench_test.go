package transport

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkServeRead is the transport's own cost of one keyed read answered by a desk that
// answers at once: routing, the request id, counting and observing, encoding.
func BenchmarkServeRead(b *testing.B) {
	for _, c := range []struct {
		name    string
		observe RequestObserver
	}{{"plain", nil}, {"observed", func(string, int, time.Duration) {}}} {
		b.Run(c.name, func(b *testing.B) {
			srv := New(Options{Desk: newFakeDesk(), ObserveRequest: c.observe})
			h := srv.Handler()
			req := httptest.NewRequest("GET", "/config", nil)
			req.Header.Set("X-API-Key", "mk_bench")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
