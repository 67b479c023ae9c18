package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDesk answers GET /rfq/mine and GET /desk with what rfqs and makers return.
func fakeDesk(t *testing.T, rfqs func() []map[string]any, makers []string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/rfq/mine":
			_ = json.NewEncoder(w).Encode(rfqs())
		case "/desk":
			_ = json.NewEncoder(w).Encode(map[string]any{"feeBps": 30, "feeTiers": []any{}, "makers": makers})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func rfqJSON(id string, deadline time.Time, open bool, quotes []map[string]any) map[string]any {
	return map[string]any{"rfqId": id, "taker": "t", "direction": "SELL", "qty": "1", "base": "cbtc", "quote": "usdcx",
		"deadline": deadline.UTC().Format(time.RFC3339Nano), "invitedMakers": []string{"slow-maker"}, "feeBps": 30, "open": open, "quotes": quotes}
}

// TestAcceptSaysWhatHappened: accept with no quote coming says what happened, as soon as it
// is known: the RFQ it waited on expired unquoted (not "no open RFQ"), every invited maker
// is offline, or the newest RFQ expired before the command ran.
func TestAcceptSaysWhatHappened(t *testing.T) {
	accept := func(t *testing.T, url string) (int, string, time.Duration) {
		env := func(k string) string { return map[string]string{"DESK_URL": url, "DESK_API_KEY": "mk_test"}[k] }
		var out, errOut bytes.Buffer
		start := time.Now()
		code := run(context.Background(), []string{"accept", "-timeout", "20s"}, &out, &errOut, env)
		return code, errOut.String(), time.Since(start)
	}
	t.Run("expired while waiting", func(t *testing.T) {
		deadline := time.Now().Add(1500 * time.Millisecond)
		var polls atomic.Int32
		url := fakeDesk(t, func() []map[string]any {
			polls.Add(1)
			if time.Now().Before(deadline) {
				return []map[string]any{rfqJSON("rfq_1", deadline, true, nil)}
			}
			return []map[string]any{rfqJSON("rfq_1", deadline, false, nil)}
		}, []string{"slow-maker"})
		code, msg, took := accept(t, url)
		if code != exitRefused || !strings.Contains(msg, "RFQ rfq_1 expired at") || !strings.Contains(msg, "with no quote: the makers invited (slow-maker) declined or were offline") {
			t.Fatalf("exit %d: %s", code, msg)
		}
		if took > 5*time.Second || polls.Load() < 2 {
			t.Fatalf("took %s over %d polls", took, polls.Load())
		}
	})
	t.Run("every invited maker offline", func(t *testing.T) {
		deadline := time.Now().Add(time.Minute)
		url := fakeDesk(t, func() []map[string]any { return []map[string]any{rfqJSON("rfq_2", deadline, true, nil)} }, []string{"someone-else"})
		code, msg, took := accept(t, url)
		if code != exitRefused || !strings.Contains(msg, "none of the makers invited (slow-maker) is online") {
			t.Fatalf("exit %d: %s", code, msg)
		}
		if took < offlineGrace || took > offlineGrace+3*time.Second {
			t.Fatalf("gave up after %s, want about %s", took, offlineGrace)
		}
	})
	t.Run("newest already expired", func(t *testing.T) {
		past := time.Now().Add(-time.Minute)
		url := fakeDesk(t, func() []map[string]any {
			return []map[string]any{rfqJSON("rfq_3", past, false, []map[string]any{
				{"quoteId": "q_1", "rfqId": "rfq_3", "maker": "slow-maker", "price": "1", "status": "expired"}})}
		}, nil)
		code, msg, took := accept(t, url)
		if code != exitRefused || !strings.Contains(msg, "no open RFQ: RFQ rfq_3 expired at") || !strings.Contains(msg, "none of its 1 quote(s) was accepted") || took > 2*time.Second {
			t.Fatalf("exit %d after %s: %s", code, took, msg)
		}
	})
}
