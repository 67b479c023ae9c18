package loop

import (
	"context"

	"github.com/deskco/rfqdesk/machine"
)

// ResumeSocket reports a stream socket that finished its handshake asking to resume after
// the event numbered since (?since= on the upgrade); the machine answers through the Sink
// with the retained events and stream.resumed, or stream.gap and the snapshot.
func (l *Loop) ResumeSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool, since uint64) error {
	in := machine.SocketOpened{Socket: socket, KeyHash: keyHash, CancelOnDisconnect: cancelOnDisconnect, Resume: true, Since: since}
	_, err := l.ask(ctx, request{input: in, ack: true})
	return err
}
