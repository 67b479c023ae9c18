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
	declines                                                        atomic.Uint64
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
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"makerbot_quotes_sent_total", "Quotes submitted and signed.", &m.quotesSent},
		{"makerbot_quotes_won_total", "Quotes that won a trade.", &m.quotesWon},
		{"makerbot_quotes_lost_total", "Quotes that lost to another maker.", &m.quotesLost},
		{"makerbot_rfqs_skipped_total", "RFQs the strategy skipped.", &m.quotesSkipped},
		{"makerbot_rfqs_declined_total", "Declines sent for RFQs the strategy skipped.", &m.declines},
		{"makerbot_quotes_refused_total", "Quote submissions the desk refused.", &m.quotesRefused},
		{"makerbot_key_recoveries_total", "API keys recovered through challenge and rotate.", &m.recoveries},
		{"makerbot_stream_connects_total", "Stream sockets opened.", &m.connects},
		{"makerbot_stream_recycles_total", "Streams closed because the desk did not see the bot invitable.", &m.streamRecycles},
		{"makerbot_faucet_draws_total", "Faucet draws.", &m.faucetDraws},
		{"makerbot_deposits_accepted_total", "Deposits accepted.", &m.depositsAccepted},
		{"makerbot_actions_signed_total", "Actions signed and executed.", &m.actionsSigned},
		{"makerbot_withdrawals_refused_total", "Withdrawal actions left unsigned.", &m.withdrawalsRefused},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v.Load())
	}
	fmt.Fprintf(w, "# HELP makerbot_settle_latency_seconds From quote submission to the quote's win.\n# TYPE makerbot_settle_latency_seconds summary\n")
	fmt.Fprintf(w, "makerbot_settle_latency_seconds_sum %g\nmakerbot_settle_latency_seconds_count %d\n",
		time.Duration(m.settleNanos.Load()).Seconds(), m.settleCount.Load())
}
