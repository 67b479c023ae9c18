package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Idempotency keys (docs/api.md, "Idempotency keys"): a write sent with an
// Idempotency-Key runs once at the desk; the same key with the same method, path and body
// answers the first answer again. The client sends a caller's key (WithIdempotencyKey on
// the call's context) and, with WithWriteRetries, gives every write a key of its own and
// sends it again under that key when its answer was lost.

// Header names of the idempotency contract.
const (
	IdempotencyKeyHeader     = "Idempotency-Key"
	IdempotentReplayedHeader = "Idempotent-Replayed"
	// CodeIdempotencyKeyReused is the code of the 422 for a key sent again with another
	// method, path or body.
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
)

// idemKeyCtx carries a caller's Idempotency-Key on a call's context.
type idemKeyCtx struct{}

// WithIdempotencyKey returns a context whose write (POST or DELETE) is sent with the
// Idempotency-Key key: 1 to 64 of A-Z, a-z, 0-9, '_', '.', ':' and '-' (the desk answers
// 400 otherwise). Use one key per logical call, and the same key only to repeat that call.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKeyCtx{}, key)
}

// WithWriteRetries makes the client send every write with an Idempotency-Key of its own
// (unless the caller chose one) and, when the answer is lost (a transport error) or is 409
// RETRY_LATER or 503, send it again up to n times under the same key, with a backoff from
// 100 ms doubling to 2 s: the desk runs it once and answers a repeat with the first answer.
// register/complete and api-key/rotate, which take no key, are never repeated.
func WithWriteRetries(n int) Option {
	return func(c *Client) { c.writeRetries = max(n, 0) }
}

// noKeyPaths are the writes the desk takes no Idempotency-Key on: their answer carries a
// new API key, which it never stores.
var noKeyPaths = map[string]bool{"/maker/register/complete": true, "/maker/api-key/rotate": true}

// do sends a request and decodes its answer: a write with the caller's Idempotency-Key or,
// with write retries, one of its own, sent again under it while the answer is lost.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, auth bool, out any) error {
	write := method == http.MethodPost || method == http.MethodDelete
	key, _ := ctx.Value(idemKeyCtx{}).(string)
	if !write || noKeyPaths[path] {
		key = ""
	}
	retries := 0
	if write && !noKeyPaths[path] && c.writeRetries > 0 {
		retries = c.writeRetries
		if key == "" {
			var err error
			if key, err = newIdempotencyKey(); err != nil {
				return fmt.Errorf("client: %s %s: %w", method, path, err)
			}
		}
	}
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := c.doOnce(ctx, method, path, query, body, auth, out, key)
		if err == nil || attempt >= retries || !retryWrite(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// retryWrite reports whether a keyed write may be sent again: its answer was lost, or the
// desk says to retry (409 RETRY_LATER, also for the key's first attempt still running, or
// 503, which records nothing).
func retryWrite(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch Status(err) {
	case http.StatusServiceUnavailable:
		return true
	case http.StatusConflict:
		return IsCode(err, CodeRetryLater)
	}
	return false
}

// newIdempotencyKey draws a key: 16 random bytes, base64url (22 characters).
func newIdempotencyKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw an idempotency key: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
