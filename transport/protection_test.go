package transport

import (
	"testing"

	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/google/go-cmp/cmp"
)

// TestProtectionRoutes: PUT /maker/protection decodes to SetProtection, POST
// /maker/protection/reset to ResetProtection, GET /maker/protection to QProtection.
func TestProtectionRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		want                     machine.Command_
	}{
		{"set", "PUT", "/maker/protection", `{"windowSeconds":60,"maxFills":3,"maxNotionalUsd":"2500.5","freezeSeconds":0}`,
			machine.SetProtection{Req: req, WindowSeconds: 60, MaxFills: 3, MaxNotionalUSD: money.MustParse("2500.5"), FreezeSeconds: 0}},
		{"set off", "PUT", "/maker/protection", `{"windowSeconds":0,"maxFills":0,"maxNotionalUsd":"0","freezeSeconds":0}`,
			machine.SetProtection{Req: req, MaxNotionalUSD: money.MustParse("0")}},
		{"set bounds", "PUT", "/maker/protection", `{"windowSeconds":86400,"maxFills":10000,"maxNotionalUsd":"1","freezeSeconds":86400}`,
			machine.SetProtection{Req: req, WindowSeconds: 86400, MaxFills: 10000, MaxNotionalUSD: money.MustParse("1"), FreezeSeconds: 86400}},
		{"reset", "POST", "/maker/protection/reset", ``, machine.ResetProtection{Req: req}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFakeDesk()
			_, ts := testServer(t, d, nil)
			if res := request(t, ts, tc.method, tc.path, tc.body, testKey, "application/json"); res.status != 200 {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			got := d.commands()
			if len(got) != 1 {
				t.Fatalf("desk got %d commands, want 1", len(got))
			}
			if diff := cmp.Diff(tc.want, got[0], cmpOpts); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProtectionBadBodies: every field missing, negative, not an integer, too large, a
// bad decimal, an unknown field: 400 before the desk is called.
func TestProtectionBadBodies(t *testing.T) {
	for name, body := range map[string]string{
		"empty":                 ``,
		"not an object":         `[]`,
		"window missing":        `{"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"fills missing":         `{"windowSeconds":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"notional missing":      `{"windowSeconds":1,"maxFills":1,"freezeSeconds":1}`,
		"freeze missing":        `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1"}`,
		"window negative":       `{"windowSeconds":-1,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"fills negative":        `{"windowSeconds":1,"maxFills":-1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"freeze negative":       `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":-1}`,
		"notional negative":     `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"-1","freezeSeconds":1}`,
		"window fraction":       `{"windowSeconds":1.5,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"fills exponent":        `{"windowSeconds":1,"maxFills":1e2,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"freeze string":         `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":"1"}`,
		"window past its bound": `{"windowSeconds":86401,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"fills past its bound":  `{"windowSeconds":1,"maxFills":10001,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"freeze past its bound": `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":86401}`,
		"window past int64":     `{"windowSeconds":99999999999999999999,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
		"notional number":       `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":1,"freezeSeconds":1}`,
		"notional 11 decimals":  `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1.00000000001","freezeSeconds":1}`,
		"notional exponent":     `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1e3","freezeSeconds":1}`,
		"notional empty":        `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"","freezeSeconds":1}`,
		"notional null":         `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":null,"freezeSeconds":1}`,
		"unknown field":         `{"windowSeconds":1,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1,"maxQty":"1"}`,
		"field twice":           `{"windowSeconds":1,"windowSeconds":2,"maxFills":1,"maxNotionalUsd":"1","freezeSeconds":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := newFakeDesk()
			_, ts := testServer(t, d, nil)
			res := request(t, ts, "PUT", "/maker/protection", body, testKey, "application/json")
			if res.status != 400 {
				t.Fatalf("status %d, want 400; body %s", res.status, res.body)
			}
			assertErrorBody(t, res, "")
			if n := d.beyondAuth(); n != 0 {
				t.Errorf("the desk was called %d times", n)
			}
		})
	}
	d := newFakeDesk()
	_, ts := testServer(t, d, nil)
	if res := request(t, ts, "POST", "/maker/protection/reset", `{"x":1}`, testKey, "application/json"); res.status != 400 || d.beyondAuth() != 0 {
		t.Fatalf("reset with a body: %d, desk called %d times", res.status, d.beyondAuth())
	}
}
