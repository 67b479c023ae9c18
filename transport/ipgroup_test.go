package transport

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLimitKey(t *testing.T) {
	cases := map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
		"fe80::1%eth0":         "fe80::/64",
		"::1":                  "::/64",
		"not an address":       "not an address",
	}
	for in, want := range cases {
		if got := limitKey(in); got != want {
			t.Errorf("limitKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPerIPLimitGroupsIPv6By64 exhausts register/start's bucket from many addresses of
// one IPv6 /64: they share it, while another /64 and IPv4 addresses have their own.
func TestPerIPLimitGroupsIPv6By64(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newFakeDesk()
	srv := New(Options{Desk: d, Now: func() time.Time { return now }})
	start := `{"displayName":"x","publicKey":"` + pubKey + `"}`
	post := func(remote string) int {
		r := httptest.NewRequest(http.MethodPost, "/maker/register/start", strings.NewReader(start))
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, r)
		return w.Code
	}
	for i := range DefaultPerIPPerMinute {
		remote := fmt.Sprintf("[2001:db8:0:1:%x::1]:4000", i+1)
		if code := post(remote); code != http.StatusOK {
			t.Fatalf("request %d from %s: %d", i, remote, code)
		}
	}
	if code := post("[2001:db8:0:1:ffff:ffff:ffff:ffff]:1"); code != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", code)
	}
	if code := post("[2001:db8:0:2::1]:1"); code != http.StatusOK {
		t.Errorf("the next /64: %d, want 200", code)
	}
	for i := range DefaultPerIPPerMinute {
		if code := post("192.0.2.1:1"); code != http.StatusOK {
			t.Fatalf("IPv4 request %d: %d", i, code)
		}
	}
	if code := post("192.0.2.2:1"); code != http.StatusOK {
		t.Errorf("another IPv4 address: %d, want 200 (IPv4 counts by address)", code)
	}
}
