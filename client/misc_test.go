package client

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// countingTransport proves that WithHTTPClient's client carries the calls.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestInjectedHTTPClientAndOKCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":false}`)
	}))
	defer srv.Close()
	tr := &countingTransport{}
	c, _ := New(srv.URL, WithAPIKey(testKey), WithHTTPClient(&http.Client{Transport: tr}))
	if err := c.Execute(context.Background(), "act_1", "c2ln"); err == nil || !strings.Contains(err.Error(), "ok: true") {
		t.Errorf("execute answered ok:false: %v", err)
	}
	if err := c.Preapproval(context.Background()); err == nil {
		t.Error("preapproval answered ok:false accepted")
	}
	if tr.n.Load() != 2 {
		t.Errorf("injected client carried %d calls, want 2", tr.n.Load())
	}
}

func TestClientSign(t *testing.T) {
	key := testPrivateKey(4)
	c, _ := New("http://127.0.0.1:1", WithPrivateKey(key))
	a := SignAction{ID: "act_1", Hash: "3q2+7w=="}
	sigB64, err := c.Sign(a)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(sigB64)
	if !ed25519.Verify(key.Public().(ed25519.PublicKey), []byte{0xde, 0xad, 0xbe, 0xef}, sig) {
		t.Error("Sign does not sign the raw hash bytes")
	}
	if _, err := c.Sign(SignAction{ID: "act_2", Hash: "%%"}); err == nil || !strings.Contains(err.Error(), "act_2") {
		t.Errorf("bad hash: %v", err)
	}
	c2, _ := New("http://127.0.0.1:1")
	if _, err := c2.Sign(a); err == nil {
		t.Error("signed without a key")
	}
}

func TestErrorStrings(t *testing.T) {
	te := &TransportError{Method: "GET", Path: "/desk", Err: io.ErrUnexpectedEOF}
	if !strings.Contains(te.Error(), "GET /desk") || !errors.Is(te, io.ErrUnexpectedEOF) {
		t.Errorf("TransportError: %v", te)
	}
	ae := &APIError{Status: 409, Code: CodeInsufficientFunds, Message: "no", Method: "POST", Path: "/rfq"}
	if got := ae.Error(); got != "POST /rfq: 409 Conflict [INSUFFICIENT_FUNDS]: no" {
		t.Errorf("APIError: %q", got)
	}
}

// TestFirstFailure: the first entry that did not execute is named; executed and in-flight
// entries are not failures.
func TestFirstFailure(t *testing.T) {
	ok := []ExecuteResult{{ActionID: "a", Status: ExecExecuted}, {ActionID: "b", Status: ExecInFlight}}
	if err := FirstFailure(ok); err != nil {
		t.Fatalf("executed and in flight: %v", err)
	}
	bad := append(ok, ExecuteResult{ActionID: "c", Status: ExecError, Error: "expired"}, ExecuteResult{ActionID: "d", Status: ExecError})
	if err := FirstFailure(bad); err == nil || !strings.Contains(err.Error(), "action c") || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("FirstFailure: %v, want action c named", err)
	}
}
