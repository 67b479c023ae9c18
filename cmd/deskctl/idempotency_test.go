package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestIdempotencyKeyFlag: a write command's -idempotency-key is sent as the request's
// Idempotency-Key; a malformed one is a usage error before any call; without the flag
// no key is sent.
func TestIdempotencyKeyFlag(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	env := func(k string) string {
		return map[string]string{"DESK_URL": srv.URL, "DESK_API_KEY": "mk_test"}[k]
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rfq", "cancel", "-idempotency-key", "retry-1", "r1"}, exitOK, "DELETE /rfq/r1 retry-1"},
		{[]string{"quote", "delete", "-idempotency-key", "a.b:c_d-e", "q1"}, exitOK, "DELETE /maker/quotes/q1 a.b:c_d-e"},
		{[]string{"rfq", "cancel", "r2"}, exitOK, "DELETE /rfq/r2 "},
		{[]string{"rfq", "cancel", "-idempotency-key", "bad key", "r3"}, exitUsage, ""},
		{[]string{"withdraw", "-idempotency-key", "", "-symbol", "cc"}, exitUsage, ""},
	} {
		mu.Lock()
		before := len(seen)
		mu.Unlock()
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := run(ctx, c.args, &out, &errOut, env)
		cancel()
		mu.Lock()
		sent := append([]string(nil), seen[before:]...)
		mu.Unlock()
		if got != c.code {
			t.Errorf("deskctl %v: exit %d, want %d (%s)", c.args, got, c.code, errOut.String())
		}
		if c.want == "" && len(sent) != 0 || c.want != "" && (len(sent) != 1 || sent[0] != c.want) {
			t.Errorf("deskctl %v sent %q, want %q", c.args, sent, c.want)
		}
	}
}
