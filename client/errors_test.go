package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAPIErrorDecoding(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		code      string
		message   string
		retryable bool
		unauth    bool
	}{
		{"insufficient funds", 409, `{"error":"free holdings cannot cover","code":"INSUFFICIENT_FUNDS"}`, CodeInsufficientFunds, "free holdings cannot cover", false, false},
		{"retry later", 409, `{"error":"allocations landing","code":"RETRY_LATER"}`, CodeRetryLater, "allocations landing", true, false},
		{"plain conflict", 409, `{"error":"deadline passed"}`, "", "deadline passed", false, false},
		{"below min notional", 400, `{"error":"too small","code":"BELOW_MIN_NOTIONAL"}`, CodeBelowMinNotional, "too small", false, false},
		{"unauthorized", 401, `{"error":"unknown API key"}`, "", "unknown API key", false, true},
		{"gone", 410, `{"error":"registration expired"}`, "", "registration expired", false, false},
		{"rate limited", 429, `{"error":"slow down"}`, "", "slow down", true, false},
		{"unavailable", 503, `{"error":"ledger busy","code":"RETRY_LATER"}`, CodeRetryLater, "ledger busy", true, false},
		{"not the desk's shape", 502, "<html>bad gateway</html>\n", "", "<html>bad gateway</html>", false, false},
		{"empty body", 500, "", "", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, _ := New(srv.URL, WithAPIKey(testKey))
			_, err := c.Status(context.Background())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v, want *APIError", err, err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.Message != tc.message {
				t.Errorf("got %+v", ae)
			}
			if ae.Method != "GET" || ae.Path != "/maker/status" {
				t.Errorf("request not named: %+v", ae)
			}
			if Status(err) != tc.status {
				t.Errorf("Status = %d", Status(err))
			}
			if tc.code != "" && !IsCode(err, tc.code) {
				t.Errorf("IsCode(%q) false", tc.code)
			}
			if IsCode(err, "OTHER") {
				t.Errorf("IsCode(OTHER) true")
			}
			if IsRetryable(err) != tc.retryable {
				t.Errorf("IsRetryable = %v", IsRetryable(err))
			}
			if errors.Is(err, ErrUnauthorized) != tc.unauth {
				t.Errorf("errors.Is(ErrUnauthorized) = %v", !tc.unauth)
			}
			if !strings.Contains(err.Error(), "/maker/status") {
				t.Errorf("message %q does not name the path", err)
			}
		})
	}
}

func TestHelpersOnOtherErrors(t *testing.T) {
	err := errors.New("plain")
	if Status(err) != 0 || IsCode(err, CodeRetryLater) || IsRetryable(err) || Status(nil) != 0 {
		t.Error("helpers matched a plain error")
	}
	wrapped := wrapf(&APIError{Status: 409, Code: CodeDustTrade})
	if !IsCode(wrapped, CodeDustTrade) || Status(wrapped) != 409 {
		t.Error("helpers do not see through wrapping")
	}
}

func wrapf(err error) error { return errors.Join(errors.New("context"), err) }

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	c, _ := New(url, WithAPIKey(testKey))
	_, err := c.Instruments(context.Background())
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %T %v, want *TransportError", err, err)
	}
	if Status(err) != 0 || !IsRetryable(err) || te.Path != "/instruments" {
		t.Errorf("transport error %+v misclassified", te)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Instruments(ctx)
	if !errors.As(err, &te) || !errors.Is(err, context.Canceled) || IsRetryable(err) {
		t.Errorf("cancelled call: %v", err)
	}
}

func TestDecodeErrorOn2xx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"party":"x","holdings":[{"symbol":"btc","amount":1.5}]}`) // a float amount
	}))
	defer srv.Close()
	c, _ := New(srv.URL, WithAPIKey(testKey))
	_, err := c.Balances(context.Background())
	if err == nil || !errors.Is(err, ErrInvalidDecimal) {
		t.Fatalf("float amount accepted: %v", err)
	}
	var ae *APIError
	var te *TransportError
	if errors.As(err, &ae) || errors.As(err, &te) {
		t.Errorf("decode error classified as %T", err)
	}
}

func TestInvalidDecimalNeverSent(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	c, _ := New(srv.URL, WithAPIKey(testKey))
	ctx := context.Background()
	if _, err := c.SubmitQuote(ctx, QuoteRequest{RFQID: "rfq_1", Price: "1e5"}); !errors.Is(err, ErrInvalidDecimal) {
		t.Errorf("quote: %v", err)
	}
	if _, err := c.SubmitQuote(ctx, QuoteRequest{RFQID: "rfq_1"}); !errors.Is(err, ErrInvalidDecimal) {
		t.Errorf("quote without price: %v", err)
	}
	if _, err := c.CreateRFQ(ctx, CreateRFQRequest{Qty: "-1"}); !errors.Is(err, ErrInvalidDecimal) {
		t.Errorf("rfq: %v", err)
	}
	if _, err := c.Withdraw(ctx, WithdrawRequest{Amount: "0.12345678901"}); !errors.Is(err, ErrInvalidDecimal) {
		t.Errorf("withdraw: %v", err)
	}
	if _, err := c.ExecuteBatch(ctx, make([]ActionSignature, MaxBatch+1)); err == nil {
		t.Error("oversized batch accepted")
	}
	if calls.Load() != 0 {
		t.Errorf("%d requests reached the desk", calls.Load())
	}
}

func TestNewValidatesBaseURL(t *testing.T) {
	for _, bad := range []string{"", "desk.example", "ftp://desk.example", "http://", "http://h/?q=1", "://x"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	c, err := New("https://desk.example/api/")
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://desk.example/api" || c.StreamURL() != "wss://desk.example/api/maker/stream" {
		t.Errorf("base %q stream %q", c.BaseURL(), c.StreamURL())
	}
	c, _ = New("http://127.0.0.1:8080")
	if c.StreamURL() != "ws://127.0.0.1:8080/maker/stream" {
		t.Errorf("stream %q", c.StreamURL())
	}
}

func TestDecimal(t *testing.T) {
	valid := []string{"0", "1", "1.5", "0.0000000001", "123456789012345678901234567890.1234567890", "1.50"}
	invalid := []string{"", "-1", "+1", "1e5", ".5", "5.", "1.12345678901", "NaN", "Inf", "1,5", " 1", "1 ", "0x10", "1.2.3", "١"}
	for _, s := range valid {
		d, err := ParseDecimal(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDecimal(%q) = %q, %v", s, d, err)
		}
		b, err := json.Marshal(d)
		if err != nil || string(b) != `"`+s+`"` {
			t.Errorf("Marshal(%q) = %s, %v", s, b, err)
		}
		var back Decimal
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Errorf("round trip %q: %q, %v", s, back, err)
		}
	}
	for _, s := range invalid {
		if _, err := ParseDecimal(s); !errors.Is(err, ErrInvalidDecimal) {
			t.Errorf("ParseDecimal(%q) accepted", s)
		}
		if s == "" {
			continue
		}
		if _, err := json.Marshal(Decimal(s)); !errors.Is(err, ErrInvalidDecimal) {
			t.Errorf("Marshal(%q) accepted: %v", s, err)
		}
		b, _ := json.Marshal(s)
		var d Decimal
		if err := json.Unmarshal(b, &d); !errors.Is(err, ErrInvalidDecimal) {
			t.Errorf("Unmarshal(%s) accepted", b)
		}
	}
	var d Decimal = "7"
	if err := json.Unmarshal([]byte("null"), &d); err != nil || !d.IsZero() {
		t.Errorf("null: %q %v", d, err)
	}
	if err := json.Unmarshal([]byte("1.5"), &d); !errors.Is(err, ErrInvalidDecimal) {
		t.Errorf("JSON number accepted: %v", err)
	}
	if b, _ := json.Marshal(Decimal("")); string(b) != "null" {
		t.Errorf("absent decimal encodes as %s", b)
	}
}
