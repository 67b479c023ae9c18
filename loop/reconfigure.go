package loop

import (
	"context"

	"github.com/deskco/rfqdesk/machine"
)

// Reconfigure journals and applies a configuration change and returns once it is durable.
// A node sends it right after starting the loop, before any request can arrive, so that
// every request sees the configuration in force.
func (l *Loop) Reconfigure(ctx context.Context, in machine.Reconfigure) error {
	_, err := l.ask(ctx, request{input: in, ack: true})
	return err
}
