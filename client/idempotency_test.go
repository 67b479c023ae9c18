package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// keyRecorder is a desk stand-in that records the Idempotency-Key of every request and
// drops the connection of the first `lose` writes without an answer.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
	lose int
}

func (k *keyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.keys = append(k.keys, r.Header.Get(IdempotencyKeyHeader))
	drop := r.Method != http.MethodGet && k.lose > 0
	if drop {
		k.lose--
	}
	k.mu.Unlock()
	if drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // the answer is lost
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func (k *keyRecorder) seen() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// TestWriteRetriesKeepTheKey: with write retries, a write whose answer is lost is sent
// again under the same Idempotency-Key, one key per logical call; a caller's key is sent as
// it is; reads and register/complete carry none; without retries a write is sent once,
// keyed only when the caller asks.
func TestWriteRetriesKeepTheKey(t *testing.T) {
	rec := &keyRecorder{lose: 2}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(srv.URL, WithAPIKey("k"), WithWriteRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Do(ctx, "POST", "/faucet", nil, nil); err != nil {
		t.Fatal(err)
	}
	keys := rec.seen()
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] || len(keys[0]) != 22 {
		t.Fatalf("attempts sent keys %q, want one generated key three times", keys)
	}
	if err := c.Do(ctx, "DELETE", "/rfq/x", nil, nil); err != nil {
		t.Fatal(err)
	}
	if k := rec.seen()[3]; k == "" || k == keys[0] {
		t.Fatalf("a second call sent key %q, want a new one", k)
	}
	if err := c.Do(WithIdempotencyKey(ctx, "mine-1"), "POST", "/rfq", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if k := rec.seen()[4]; k != "mine-1" {
		t.Fatalf("the caller's key was sent as %q", k)
	}
	if err := c.Do(ctx, "GET", "/desk", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.do(WithIdempotencyKey(ctx, "x"), "POST", "/maker/register/complete", nil, map[string]any{}, false, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen()[5:]; got[0] != "" || got[1] != "" {
		t.Fatalf("a read and register/complete sent keys %q", got)
	}

	rec2 := &keyRecorder{lose: 1}
	srv2 := httptest.NewServer(rec2)
	defer srv2.Close()
	plain, err := New(srv2.URL, WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Do(ctx, "POST", "/faucet", nil, nil); err == nil {
		t.Fatal("a lost answer without retries was not an error")
	}
	if keys := rec2.seen(); len(keys) != 1 || keys[0] != "" {
		t.Fatalf("without retries: %q, want one unkeyed attempt", keys)
	}
}
