package machine

import "fmt"

// flow is an API command that keeps its whole feature beside its type, in its own file: its
// journal kind (Kind), its binary body in the journal record, and what the desk does with
// it. The file registers it once, from its init function (registerFlow); the shared code
// needs nothing else: Apply dispatches it to run once the caller is authenticated
// (commands.go), the journal encodes and decodes it (inputcodec.go), and the record
// round-trip tests cover it (snapshot_test.go). docs/architecture.md, "How to add an
// endpoint", lists the files a new endpoint touches.
type flow interface {
	Command_
	// encodeBody appends the command's fields, the body of its journal record.
	encodeBody(e *encoder)
	// decodeBody reads the fields encodeBody wrote and returns the command (a value, not a
	// pointer, as Apply switches on values).
	decodeBody(d *decoder) Input
	// run applies the command for its authenticated caller.
	run(a *applier, caller *Party)
}

// flows maps the journal kind of every registered flow to its zero value. The flows' init
// functions fill it, before any other code of the package runs; nothing writes it after.
var flows = map[string]flow{}

// registerFlow adds a flow to the registry. Two flows of one kind, or a flow named like an
// input of codec.go, is a programming error that stops the program at its start.
func registerFlow(f flow) {
	k := f.Kind()
	if _, dup := flows[k]; dup {
		panic(fmt.Sprintf("machine: two flows of input kind %q", k))
	}
	if _, dup := inputKinds[k]; dup {
		panic(fmt.Sprintf("machine: flow kind %q is an input kind of codec.go", k))
	}
	flows[k] = f
}
