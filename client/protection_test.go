package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestProtectionCalls: the three maker-protection calls send what the desk expects and
// decode its body; maker.protection decodes, by its helper and by Decode.
func TestProtectionCalls(t *testing.T) {
	const body = `{"windowSeconds":60,"maxFills":3,"maxNotionalUsd":"2500.5","freezeSeconds":0,"frozen":true,` +
		`"frozenUntil":null,"fillsInWindow":0,"notionalInWindowUsd":"0"}`
	want := &Protection{ProtectionSettings: ProtectionSettings{WindowSeconds: 60, MaxFills: 3, MaxNotionalUSD: "2500.5"},
		Frozen: true, NotionalInWindowUSD: "0"}
	for _, tc := range []callCase{
		{name: "get", call: func(ctx context.Context, c *Client) (any, error) { return c.Protection(ctx) },
			method: "GET", path: "/maker/protection", auth: true, status: 200, respBody: body, want: want},
		{name: "set", call: func(ctx context.Context, c *Client) (any, error) {
			return c.SetProtection(ctx, ProtectionSettings{WindowSeconds: 60, MaxFills: 3, MaxNotionalUSD: "2500.5"})
		}, method: "PUT", path: "/maker/protection", auth: true, status: 200, respBody: body, want: want,
			reqBody: `{"windowSeconds":60,"maxFills":3,"maxNotionalUsd":"2500.5","freezeSeconds":0}`},
		{name: "set without a notional limit", call: func(ctx context.Context, c *Client) (any, error) {
			return c.SetProtection(ctx, ProtectionSettings{WindowSeconds: 60, MaxFills: 3, FreezeSeconds: 5})
		}, method: "PUT", path: "/maker/protection", auth: true, status: 200, respBody: body, want: want,
			reqBody: `{"windowSeconds":60,"maxFills":3,"maxNotionalUsd":"0","freezeSeconds":5}`},
		{name: "reset", call: func(ctx context.Context, c *Client) (any, error) { return c.ResetProtection(ctx) },
			method: "POST", path: "/maker/protection/reset", auth: true, status: 200, respBody: body, want: want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				checkRequest(t, tc, r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.respBody)
			}))
			defer srv.Close()
			c, err := New(srv.URL+"/", WithAPIKey(testKey))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
	ev := Event{Type: EventMakerProtection, Payload: []byte(`{"triggered":"notional","frozenUntil":"2026-11-21T12:00:30.000Z","revoked":["q_1","q_2"]}`)}
	p, err := ev.MakerProtection()
	if err != nil || p.Triggered != "notional" || p.FrozenUntil == nil || !p.FrozenUntil.Equal(mustTime("2026-11-21T12:00:30Z")) ||
		!reflect.DeepEqual(p.Revoked, []string{"q_1", "q_2"}) {
		t.Fatalf("maker.protection decoded as %+v, %v", p, err)
	}
	if d, err := ev.Decode(); err != nil || !reflect.DeepEqual(d, p) {
		t.Fatalf("Decode: %#v %v", d, err)
	}
}
