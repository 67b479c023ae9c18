// Package machine is the functional core of the desk: its whole behaviour as a pure function
// of state and input.
//
// A Desk holds every RFQ, quote, trade, sign action, registration and party the desk knows.
// Apply feeds it one Input (an API command with the caller's key hash, a ledger result, a
// clock tick, a socket opened or closed, a boot marker) stamped with the time the loop read
// from its clock, and returns Outputs as data: the reply to a request, stream events addressed
// to parties, ledger calls carrying deterministic command ids, socket closes, and the next
// deadline at which the loop must send a Tick.
//
// Nothing here reads a clock, starts a goroutine, does I/O, draws global randomness or lets
// map iteration decide an output; ids come from a seeded generator kept in the state. The same
// sequence of inputs therefore always yields the same state and outputs, which is what makes
// restart, simulation and replay the same thing.
//
// Reads (GET requests) are answered by Read, which never changes the state.
package machine
