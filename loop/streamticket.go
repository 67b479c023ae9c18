package loop

import (
	"context"

	"github.com/deskco/rfqdesk/machine"
)

// OpenTicketSocket reports a stream socket that finished its handshake with a stream ticket
// (?ticket= on the upgrade) instead of a key: the machine redeems the ticket with this hash
// and answers through the Sink, with the snapshot (or the resume) or a 4401 close.
func (l *Loop) OpenTicketSocket(ctx context.Context, socket uint64, ticketHash string, cancelOnDisconnect, resume bool, since uint64) error {
	in := machine.SocketOpened{Socket: socket, TicketHash: ticketHash, CancelOnDisconnect: cancelOnDisconnect, Resume: resume, Since: since}
	_, err := l.ask(ctx, request{input: in, ack: true})
	return err
}
