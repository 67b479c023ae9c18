package main

import (
	"context"
	"flag"
	"regexp"

	"github.com/deskco/rfqdesk/client"
)

// idemKeyGrammar is the desk's Idempotency-Key grammar (docs/api.md, "Idempotency keys").
var idemKeyGrammar = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// keyFlag registers --idempotency-key on a write command: the command's write is sent with
// that key, so that running the same command line again after a lost answer does not do
// the write twice (the desk answers the first answer again). A key outside the grammar is
// a usage error.
func (e *env) keyFlag(fs *flag.FlagSet) {
	fs.Func("idempotency-key", "send the write with this Idempotency-Key (1 to 64 of A-Z a-z 0-9 _ . : -); repeat the command with the same key to retry it safely", func(s string) error {
		if !idemKeyGrammar.MatchString(s) {
			return usagef("-idempotency-key must be 1 to 64 of A-Z a-z 0-9 _ . : -")
		}
		e.idemKey = s
		return nil
	})
}

// keyed is the context of the command's write: with its Idempotency-Key, when one was given.
func (e *env) keyed(ctx context.Context) context.Context {
	if e.idemKey == "" {
		return ctx
	}
	return client.WithIdempotencyKey(ctx, e.idemKey)
}
