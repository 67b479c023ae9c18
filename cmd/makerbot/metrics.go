package main

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// metrics are the bot's counters.
type metrics struct {
	quotesSent, quotesWon, quotesLost, quotesSkipped, quotesRefused atomic.Uint64
	settleNanos, settleCount                                        atomic.Uint64
	recoveries, connects, faucetDraws, depositsAccepted             atomic.Uint64
	actionsSigned, withdrawalsRefused, streamRecycles               atomic.Uint64
}

// observeSettle records one settle latency.
func (m *metrics) observeSettle(d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.settleNanos.Add(uint64(d))
	m.settleCount.Add(1)
}

// write renders the counters in the Prometheus text exposition format.
func (m *metrics) write(w io.Writer) {
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	counter("makerbot_quotes_sent_total", "Quotes submitted and signed.", m.quotesSent.Load())
	counter("makerbot_quotes_won_total", "Quotes that won a trade.", m.quotesWon.Load())
	counter("makerbot_quotes_lost_total", "Quotes that lost to another maker.", m.quotesLost.Load())
	counter("makerbot_rfqs_skipped_total", "RFQs the strategy skipped.", m.quotesSkipped.Load())
	counter("makerbot_quotes_refused_total", "Quote submissions the desk refused.", m.quotesRefused.Load())
	counter("makerbot_key_recoveries_total", "API keys recovered through challenge and rotate.", m.recoveries.Load())
	counter("makerbot_stream_connects_total", "Stream sockets opened.", m.connects.Load())
	counter("makerbot_stream_recycles_total", "Streams closed because the desk did not see the bot invitable.", m.streamRecycles.Load())
	counter("makerbot_faucet_draws_total", "Faucet draws.", m.faucetDraws.Load())
	counter("makerbot_deposits_accepted_total", "Deposits accepted.", m.depositsAccepted.Load())
	counter("makerbot_actions_signed_total", "Actions signed and executed.", m.actionsSigned.Load())
	counter("makerbot_withdrawals_refused_total", "Withdrawal actions left unsigned.", m.withdrawalsRefused.Load())
	fmt.Fprintf(w, "# HELP makerbot_settle_latency_seconds From quote submission to the quote's win.\n# TYPE makerbot_settle_latency_seconds summary\n")
	fmt.Fprintf(w, "makerbot_settle_latency_seconds_sum %g\nmakerbot_settle_latency_seconds_count %d\n",
		time.Duration(m.settleNanos.Load()).Seconds(), m.settleCount.Load())
}
