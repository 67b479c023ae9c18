package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/deskco/rfqdesk/machine"
)

// wireError is a request the transport refuses before the desk sees it: an HTTP status and
// a human-readable message (the `error` of the error body; no `code`).
type wireError struct {
	status int
	msg    string
}

func (e *wireError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

func badRequest(format string, args ...any) *wireError {
	return &wireError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// readBody reads the whole request body, at most max bytes; a larger body is 413.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *wireError) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &wireError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body is larger than %d bytes", max)}
		}
		return nil, badRequest("cannot read the request body: %v", err)
	}
	return b, nil
}

// decodeStrict decodes exactly one JSON object into v: unknown fields, wrong JSON types,
// anything but an object at the top, and trailing data are all 400.
func decodeStrict(body []byte, v any) *wireError {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return badRequest("a JSON object body is required")
	}
	if trimmed[0] != '{' {
		return badRequest("the body must be a JSON object")
	}
	if werr := checkKeys(trimmed, v); werr != nil {
		return werr
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("invalid JSON body: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("the body must hold exactly one JSON value")
	}
	return nil
}

// decodeEmpty accepts the body of a bodiless POST: empty (with or without a Content-Type),
// whitespace, or an empty JSON object.
func decodeEmpty(body []byte) *wireError {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	var none struct{}
	if err := decodeStrict(body, &none); err != nil {
		return badRequest("this call takes no body (send none, or {}): %s", err.msg)
	}
	return nil
}

// describeJSONError words a decoding error for the client without echoing Go type names.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q has the wrong JSON type (%s)", typeErr.Field, typeErr.Value)
		}
		return fmt.Sprintf("wrong JSON type (%s)", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// b64 is a byte string on the wire as standard, padded base64 inside a JSON string.
type b64 []byte

// UnmarshalJSON accepts only a JSON string of strict standard base64 (no line breaks).
func (b *b64) UnmarshalJSON(data []byte) error {
	var s string
	if len(data) == 0 || data[0] != '"' {
		return errors.New("base64 data must be a JSON string")
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if strings.ContainsAny(s, "\r\n") {
		return errors.New("base64 data must not contain line breaks")
	}
	v, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return errors.New("not standard padded base64")
	}
	*b = v
	return nil
}

// wireTime is a timestamp on the wire (RFC 3339, Z or an offset), read with machine.ParseTime.
type wireTime time.Time

// UnmarshalJSON accepts only a JSON string holding an RFC 3339 timestamp.
func (t *wireTime) UnmarshalJSON(data []byte) error {
	var s string
	if len(data) == 0 || data[0] != '"' {
		return errors.New("a timestamp must be a JSON string")
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := machine.ParseTime(s)
	if err != nil {
		return err
	}
	*t = wireTime(v)
	return nil
}

// Bounds of identifiers the transport accepts before the desk looks them up.
const (
	maxIDLen      = 128 // rfq, quote, action, registration ids and contract ids
	maxPartyIDLen = 256 // "<hint>::1220<64 hex>" with a hint of at most 39 characters
	maxTextLen    = 256 // symbols, challenges and other short strings
	maxSignatures = 64  // topology signatures in register/complete
)

// validID checks an id (path parameter or body field): 1 to maxIDLen characters of
// letters, digits, '_', '-', '.' and ':'. Path values arrive decoded, so this also keeps
// '/', '%' and control characters out.
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// checkID refuses a missing or malformed id field.
func checkID(field, v string) *wireError {
	if v == "" {
		return badRequest("%s is required", field)
	}
	if !validID(v) {
		return badRequest("%s must be 1 to %d letters, digits, '_', '-', '.' or ':'", field, maxIDLen)
	}
	return nil
}

// checkText refuses a missing, overlong or non-printable short string field.
func checkText(field, v string, max int) *wireError {
	if v == "" {
		return badRequest("%s is required", field)
	}
	if len(v) > max {
		return badRequest("%s is longer than %d bytes", field, max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return badRequest("%s contains a control character", field)
		}
	}
	return nil
}

// checkSignature refuses a missing signature or one that is not 64 bytes.
func checkSignature(field string, sig []byte) *wireError {
	if sig == nil {
		return badRequest("%s is required", field)
	}
	if len(sig) != 64 {
		return badRequest("%s must be a base64 64-byte Ed25519 signature, got %d bytes", field, len(sig))
	}
	return nil
}

// parseQuery parses the raw query strictly: a malformed query is 400.
func parseQuery(r *http.Request) (url.Values, *wireError) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string")
	}
	return q, nil
}

// single returns the one value of a query parameter; present reports whether it was given.
func single(q url.Values, name string) (v string, present bool, werr *wireError) {
	vs, ok := q[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) != 1 {
		return "", true, badRequest("%s is given more than once", name)
	}
	return vs[0], true, nil
}

// parseLimit reads the `limit` query: absent means machine.DefaultLimit; otherwise an
// integer from 1 to machine.MaxLimit written in plain digits.
func parseLimit(r *http.Request) (int, *wireError) {
	q, werr := parseQuery(r)
	if werr != nil {
		return 0, werr
	}
	v, present, werr := single(q, "limit")
	if werr != nil {
		return 0, werr
	}
	if !present {
		return machine.DefaultLimit, nil
	}
	bad := badRequest("limit must be an integer from 1 to %d", machine.MaxLimit)
	if v == "" || len(v) > 6 {
		return 0, bad
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > machine.MaxLimit {
		return 0, bad
	}
	return n, nil
}

// checkKeys closes two gaps of encoding/json at the top level of the object: it matches
// field names case-insensitively ({"PRICE": ...} would fill price) and lets a repeated key
// win silently. A top-level key must spell a field's json name exactly, once. Malformed
// JSON is left to the decoder's own error.
func checkKeys(body []byte, v any) *wireError {
	names := jsonNames(v)
	if names == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil
		}
		if !names[key] {
			return badRequest("invalid JSON body: unknown field %q", truncate(key, 64))
		}
		if seen[key] {
			return badRequest("invalid JSON body: field %q appears twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// jsonNames is the set of json field names of the struct v points to (nil when v is not a
// pointer to a struct).
func jsonNames(v any) map[string]bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	names := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
