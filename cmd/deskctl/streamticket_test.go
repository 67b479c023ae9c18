package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStreamTicketCommand: deskctl stream-ticket posts with the key and prints the ticket,
// its expiry and the stream address carrying it; -json prints the answer as it came.
func TestStreamTicketCommand(t *testing.T) {
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/maker/stream/ticket" {
			http.NotFound(w, r)
			return
		}
		keys = append(keys, r.Header.Get("X-API-Key"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ticket":"st_abc-_9","expiresAt":"2026-11-21T12:00:30.000Z"}`))
	}))
	t.Cleanup(srv.Close)
	env := func(k string) string { return map[string]string{"DESK_URL": srv.URL, "DESK_API_KEY": "mk_test"}[k] }
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"stream-ticket"}, &out, &errOut, env); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"st_abc-_9", "2026-11-21T12:00:30Z", "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/maker/stream?ticket=st_abc-_9"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"stream-ticket", "-json"}, &out, &errOut, env); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"ticket"`) || strings.Join(keys, ",") != "mk_test,mk_test" {
		t.Fatalf("-json printed %s; keys sent %v", out.String(), keys)
	}
}
