// Package transport is the desk's thin HTTP (httprouter) and WebSocket (gws) layer.
//
// It decodes and validates the wire syntax of SPEC.md and DECISIONS.md (strict JSON, decimal
// strings, timestamps, base64, path ids, the limit query), authenticates the caller by
// hashing its X-API-Key, turns each request into a machine command or query, waits for the
// desk loop's reply through the Desk interface and encodes it. No business rule lives here:
// everything that depends on the desk's state is the machine's.
//
// The stream hub (Hub) receives the loop's socket outputs through Deliver: bindings, events
// and closes. Deliver never blocks: each event is encoded once and enqueued into bounded
// per-socket queues drained by one writer goroutine per socket; a socket whose queue is full
// is closed as a slow consumer.
//
// Secrets stay here: API keys and key-rotation challenges are drawn from crypto/rand, and the
// machine only ever sees the SHA-256 of a key. Keys are never logged.
package transport
