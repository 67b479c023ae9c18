package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// httpCall sends one request with body ("" for none) and the headers given (one whose
// value is empty is not sent) and returns the answer with its body read and closed (a 101's
// body, the socket, is closed unread).
func httpCall(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusSwitchingProtocols {
		return res, nil
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}
