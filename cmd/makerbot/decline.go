package main

import (
	"context"
	"errors"

	"github.com/deskco/rfqdesk/client"
)

// decline tells the desk the bot will not quote the RFQ, with reason (one of the desk's
// decline reasons, from strategy.DeclineReason), unless -decline=false or the bot already
// declined it with that reason (a repeat would tell the taker nothing new). A refusal (the
// RFQ closed meanwhile, say) is logged and forgotten; only a dead API key is returned, for
// the stream loop to recover it.
func (b *bot) decline(ctx context.Context, rfqID, reason string) error {
	if !b.cfg.decline || reason == "" || b.declined[rfqID] == reason {
		return nil
	}
	if err := b.c.DeclineRFQ(ctx, rfqID, reason); err != nil {
		if errors.Is(err, client.ErrUnauthorized) {
			return err
		}
		b.log.Debug("decline refused", "rfq", rfqID, "reason", reason, "err", err)
		return nil
	}
	if len(b.declined) >= maxTracked {
		clear(b.declined)
	}
	b.declined[rfqID] = reason
	b.metrics.declines.Add(1)
	b.log.Debug("declined", "rfq", rfqID, "reason", reason)
	return nil
}
