package client

// EventQuoteDeclined is the stream event telling a taker that an invited maker declined
// its RFQ (POST /maker/rfq/{id}/decline); its payload decodes with Event.QuoteDeclined.
const EventQuoteDeclined = "quote.declined"

// QuoteDeclined is the payload of quote.declined: the RFQ, the declining maker's hint and
// its reason (price, size, inventory, instrument or other).
type QuoteDeclined struct {
	RFQID  string `json:"rfqId"`
	Maker  string `json:"maker"`
	Reason string `json:"reason"`
}

// QuoteDeclined decodes a quote.declined payload.
func (e Event) QuoteDeclined() (*QuoteDeclined, error) {
	return decodeAs[QuoteDeclined](e, EventQuoteDeclined)
}
