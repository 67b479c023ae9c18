package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Stable error codes the desk puts in the `code` field of an error body. Match on these
// (with IsCode) and on the HTTP status, never on the human-readable text.
const (
	CodeBelowMinNotional  = "BELOW_MIN_NOTIONAL"
	CodeInsufficientFunds = "INSUFFICIENT_FUNDS"
	CodeRetryLater        = "RETRY_LATER"
	CodeDustTrade         = "DUST_TRADE"
)

// ErrUnauthorized is matched (with errors.Is) by every authentication failure: an HTTP 401
// answer and a stream closed with code 4401 or refused at the upgrade. The remedy is a new
// API key (Client.RecoverKey), then a retry.
var ErrUnauthorized = errors.New("unauthorized")

// APIError is a non-2xx answer of the desk, decoded from its `{error, code?}` body.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable machine-readable code, empty when the desk sent none.
	Code string
	// Message is the human-readable `error` text (or the start of a body that was not the
	// desk's JSON error shape). Its wording may change; do not match on it.
	Message string
	// Method and Path name the request that failed, for error messages.
	Method, Path string
}

// Error describes the failed call, its status, code and message.
func (e *APIError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " [" + e.Code + "]"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is lets errors.Is(err, ErrUnauthorized) match a 401 answer.
func (e *APIError) Is(target error) bool {
	return target == ErrUnauthorized && e.Status == http.StatusUnauthorized
}

// TransportError is a call that got no HTTP answer from the desk (connection refused, reset,
// timeout, context cancelled, or a body cut short). Whether the desk acted on the request is
// unknown; for a signature, GET /tx/pending tells.
type TransportError struct {
	// Method and Path name the request.
	Method, Path string
	// Err is the underlying error.
	Err error
}

// Error describes the request and the underlying failure.
func (e *TransportError) Error() string {
	return fmt.Sprintf("%s %s: transport: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the underlying error, so errors.Is(err, context.Canceled) works.
func (e *TransportError) Unwrap() error { return e.Err }

// IsCode reports whether err is (or wraps) an *APIError with the given code.
func IsCode(err error, code string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// Status returns the HTTP status of the *APIError in err's chain, or 0 when there is none.
func Status(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// IsRetryable reports whether err is one the desk calls transient, so that the same call may
// be retried with backoff: a transport error (other than the caller's own cancellation),
// 409 RETRY_LATER, 429, or any 503. A transport
// error on a non-idempotent call may mean the call took effect; check before repeating it.
func IsRetryable(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return !errors.Is(err, context.Canceled)
	}
	switch Status(err) {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return true
	case http.StatusConflict:
		return IsCode(err, CodeRetryLater)
	}
	return false
}
