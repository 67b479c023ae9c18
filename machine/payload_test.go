package machine

import "testing"

// TestPayloadAs: a value and a non-nil pointer read as the value; a nil pointer and
// another type do not read at all.
func TestPayloadAs(t *testing.T) {
	q := QuoteDTO{QuoteID: "q_1"}
	if got, ok := PayloadAs[QuoteDTO](q); !ok || got.QuoteID != "q_1" {
		t.Fatalf("a value: %+v, %v", got, ok)
	}
	if got, ok := PayloadAs[QuoteDTO](&q); !ok || got.QuoteID != "q_1" {
		t.Fatalf("a pointer: %+v, %v", got, ok)
	}
	if _, ok := PayloadAs[QuoteDTO]((*QuoteDTO)(nil)); ok {
		t.Fatal("a nil pointer read as a quote")
	}
	if _, ok := PayloadAs[QuoteDTO](TradeDTO{}); ok {
		t.Fatal("a trade read as a quote")
	}
}
