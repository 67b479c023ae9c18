package machine

import "fmt"

// Stable error codes of SPEC.md's error table; clients match on these and the HTTP status.
const (
	CodeBelowMinNotional  = "BELOW_MIN_NOTIONAL"
	CodeRetryLater        = "RETRY_LATER"
	CodeInsufficientFunds = "INSUFFICIENT_FUNDS"
	CodeDustTrade         = "DUST_TRADE"
)

// APIError is a refusal: the HTTP status, the stable code (empty where SPEC.md defines none)
// and a human-readable message whose wording may change.
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"error"`
}

// Error renders the refusal for logs.
func (e *APIError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("%d: %s", e.Status, e.Message)
}

func apiErr(status int, code, format string, args ...any) *APIError {
	return &APIError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *APIError { return apiErr(400, "", format, args...) }
func unauthorized(format string, args ...any) *APIError {
	return apiErr(401, "", format, args...)
}
func forbidden(format string, args ...any) *APIError { return apiErr(403, "", format, args...) }
func notFound(format string, args ...any) *APIError  { return apiErr(404, "", format, args...) }
func conflict(format string, args ...any) *APIError  { return apiErr(409, "", format, args...) }
func gone(format string, args ...any) *APIError      { return apiErr(410, "", format, args...) }
func notImplemented(format string, args ...any) *APIError {
	return apiErr(501, "", format, args...)
}
func badGateway(format string, args ...any) *APIError { return apiErr(502, "", format, args...) }
func unavailable(code, format string, args ...any) *APIError {
	return apiErr(503, code, format, args...)
}

// errUnknownKey is the answer to every request whose API key matches no party.
var errUnknownKey = &APIError{Status: 401, Message: "unknown or missing API key"}
