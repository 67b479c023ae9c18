package loop

import (
	"context"
	"fmt"

	"github.com/deskco/rfqdesk/machine"
)

// ReadOps answers the operator's view of the whole desk (machine.ReadOps), each list cut
// at limit, consistently with every input applied before it, once those are durable, as
// Read does. It is for the admin listener only: no party's key reaches it, and a keyed
// Read of a machine.QOps is refused like any unknown query.
func (l *Loop) ReadOps(ctx context.Context, limit int) (machine.OpsView, error) {
	rep, err := l.ask(ctx, request{query: machine.QOps{Limit: limit}, ops: true})
	if err != nil {
		return machine.OpsView{}, err
	}
	v, ok := rep.Body.(machine.OpsView)
	if !ok {
		return machine.OpsView{}, fmt.Errorf("operator read: the loop answered %d, not the view", rep.Status)
	}
	return v, nil
}
