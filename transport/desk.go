package transport

import (
	"context"

	"github.com/deskco/rfqdesk/machine"
)

// Desk is the single-threaded desk loop as the transport sees it.
type Desk interface {
	// Do journals and applies a command and returns its reply once durable.
	Do(ctx context.Context, cmd machine.Command_) (machine.Reply, error)
	// Read answers a query for the caller with this key hash (it resolves the caller itself).
	Read(ctx context.Context, keyHash string, q machine.Query) (machine.Reply, error)
	// OpenSocket / CloseSocket report a stream socket's life (OpenSocket with its
	// cancel-on-disconnect mark); the machine's answer (binding, snapshot events, or a 4401
	// close) comes back through the hub's Deliver.
	OpenSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool) error
	CloseSocket(ctx context.Context, socket uint64) error
}
