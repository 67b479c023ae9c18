package machine

import "strconv"

// The serialized prepared transactions the desk keeps (LedgerResult.Prepared): opaque
// bytes the ledger answered a prepare with and takes back at execute. One lives in the
// allocation it was prepared for until its action is made, then in the action, and in the
// execute call while that is with the ledger. The snapshot keeps them in a section of
// their own after the stream tickets (since snapshot version 5), with the ledger offsets
// the desk records with its calls (Desk.LedgerEnd, LedgerCall.Since), so that the
// entities' encodings stay as older desks wrote them.

// preparedKey names the i-th allocation of a quote ("q") or a trade ("t") in the section.
func preparedKey(kind, entity string, i int) string {
	return kind + "\x00" + entity + "\x00" + strconv.Itoa(i)
}

// writePreparedSection writes every kept prepared transaction: the actions', their
// last executes', the allocations' not yet made actions, and the calls' in flight, each
// in key order (an executing action's blob is written twice: executes are few).
func writePreparedSection(e *encoder, d *Desk) {
	actions, executes := map[string][]byte{}, map[string][]byte{}
	for id, x := range d.Actions {
		if x != nil && len(x.Prepared) > 0 {
			actions[id] = x.Prepared
		}
		if x != nil && x.Execute != nil && len(x.Execute.Prepared) > 0 {
			executes[id] = x.Execute.Prepared
		}
	}
	allocs := map[string][]byte{}
	for id, q := range d.Quotes {
		if q == nil {
			continue
		}
		for i := range q.Allocations {
			if al := &q.Allocations[i]; len(al.Prepared) > 0 {
				allocs[preparedKey("q", id, i)] = al.Prepared
			}
		}
	}
	for id, t := range d.Trades {
		if t == nil {
			continue
		}
		for i := range t.Allocations {
			if al := &t.Allocations[i]; len(al.Prepared) > 0 {
				allocs[preparedKey("t", id, i)] = al.Prepared
			}
		}
	}
	calls := map[string][]byte{}
	for k, c := range d.Pending {
		if c != nil && len(c.Call.Prepared) > 0 {
			calls[k] = c.Call.Prepared
		}
	}
	for _, m := range []map[string][]byte{actions, executes, allocs, calls} {
		writeMap(e, m, (*encoder).Bytes)
	}
	// The completion offsets recorded with the calls (LedgerCall.Since), and the ledger
	// end the next calls record.
	e.Varint(d.LedgerEnd)
	execSince, callSince := map[string]int64{}, map[string]int64{}
	for id, x := range d.Actions {
		if x != nil && x.Execute != nil && x.Execute.Since != 0 {
			execSince[id] = x.Execute.Since
		}
	}
	for k, c := range d.Pending {
		if c != nil && c.Call.Since != 0 {
			callSince[k] = c.Call.Since
		}
	}
	writeMap(e, execSince, (*encoder).Varint)
	writeMap(e, callSince, (*encoder).Varint)
}

// readPreparedSection reads what writePreparedSection wrote and puts every blob back in
// its place.
func readPreparedSection(dec *decoder, d *Desk) {
	actions := readMap(dec, (*decoder).Str, (*decoder).Bytes)
	executes := readMap(dec, (*decoder).Str, (*decoder).Bytes)
	allocs := readMap(dec, (*decoder).Str, (*decoder).Bytes)
	calls := readMap(dec, (*decoder).Str, (*decoder).Bytes)
	d.LedgerEnd = dec.Varint()
	execSince := readMap(dec, (*decoder).Str, (*decoder).Varint)
	callSince := readMap(dec, (*decoder).Str, (*decoder).Varint)
	if dec.Err() != nil {
		return
	}
	for id, s := range execSince {
		if x := d.Actions[id]; x != nil && x.Execute != nil {
			x.Execute.Since = s
		}
	}
	for k, s := range callSince {
		if c := d.Pending[k]; c != nil {
			c.Call.Since = s
		}
	}
	for id, b := range actions {
		if x := d.Actions[id]; x != nil {
			x.Prepared = b
		}
	}
	for id, b := range executes {
		if x := d.Actions[id]; x != nil && x.Execute != nil {
			x.Execute.Prepared = b
		}
	}
	put := func(kind, id string, als []AllocationRef) {
		for i := range als {
			if b, ok := allocs[preparedKey(kind, id, i)]; ok {
				als[i].Prepared = b
			}
		}
	}
	for id, q := range d.Quotes {
		if q != nil {
			put("q", id, q.Allocations)
		}
	}
	for id, t := range d.Trades {
		if t != nil {
			put("t", id, t.Allocations)
		}
	}
	for k, b := range calls {
		if c := d.Pending[k]; c != nil {
			c.Call.Prepared = b
		}
	}
}
