package client

import (
	"context"
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
	runCallCases(t, []callCase{
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
	})
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
