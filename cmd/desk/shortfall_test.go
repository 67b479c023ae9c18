package main

import (
	"strings"
	"testing"

	"github.com/deskco/rfqdesk/client"
)

// TestInsufficientFundsInCallersTerms: a maker that cannot fund its quote hears it in its
// own terms (symbol, free amount, amount needed), without the party id or the registry's
// instrument id.
func TestInsufficientFundsInCallersTerms(t *testing.T) {
	d := startLive(t, baseConfig)
	broke, taker := maker(t, d, "Broke Quoter", false), house(t, d)
	subscribe(t, broke)
	rfq, err := taker.CreateRFQ(ctx(t), client.CreateRFQRequest{Direction: "SELL", Qty: "1", Base: "cbtc", Quote: "usdcx",
		InvitedMakers: []string{broke.Hint()}, TTLSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	status, body := rawCall(t, "POST", d.base+"/maker/quotes", broke.APIKey(), `{"rfqId":"`+rfq.RFQID+`","price":"50000"}`)
	if status != 409 || !strings.Contains(body, `"code":"INSUFFICIENT_FUNDS"`) || !strings.Contains(body, "0 usdcx free, 50000 usdcx needed") {
		t.Fatalf("%d %s", status, body)
	}
	if strings.Contains(body, "::") || strings.Contains(body, "registry") {
		t.Fatalf("the refusal leaks ledger ids: %s", body)
	}
}
