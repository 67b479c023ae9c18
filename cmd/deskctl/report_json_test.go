package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// TestReportJSON: with -json an error is one JSON object with the same exit code: a
// refusal carries the desk's status, code (when sent) and message.
func TestReportJSON(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"refused", fmt.Errorf("w: %w", &client.APIError{Status: 409, Code: "INSUFFICIENT_FUNDS", Message: "0 cbtc free, 1 cbtc needed"}),
			`{"error":{"kind":"refused","exit":1,"status":409,"code":"INSUFFICIENT_FUNDS","message":"0 cbtc free, 1 cbtc needed"}}`},
		{"refused without code", &client.APIError{Status: 404, Message: "gone"}, `{"error":{"kind":"refused","exit":1,"status":404,"message":"gone"}}`},
		{"timeout", fmt.Errorf("%w after 1s waiting for a quote", errTimeout), `{"error":{"kind":"timeout","exit":4,"message":"timed out after 1s waiting for a quote"}}`},
		{"usage", usagef("bad flag"), `{"error":{"kind":"usage","exit":2,"message":"bad flag"}}`},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := reportJSON(&stderr, c.err)
		var probe jsonError
		if err := json.Unmarshal(stderr.Bytes(), &probe); err != nil || code != probe.Error.Exit || stderr.String() != c.want+"\n" {
			t.Errorf("%s: exit %d, printed %q; want %s", c.name, code, stderr.String(), c.want)
		}
	}
	// Over a real call: a 404 with the desk's error body, through run with -json.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"unknown instrument \"doge\": the instruments are cc, usdcx"}`))
	}))
	defer srv.Close()
	env := func(k string) string { return map[string]string{"DESK_URL": srv.URL, "DESK_API_KEY": "mk_test"}[k] }
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"balances", "-json"}, &out, &errOut, env)
	want := `{"error":{"kind":"refused","exit":1,"status":404,"message":"unknown instrument \"doge\": the instruments are cc, usdcx"}}` + "\n"
	if code != exitRefused || errOut.String() != want {
		t.Fatalf("exit %d, stderr %q, want %q", code, errOut.String(), want)
	}
}
