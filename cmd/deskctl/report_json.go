package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// jsonError is how -json prints a failure on stderr: one JSON object a script can parse
// instead of the text line. Status and Code are set for a refusal by the desk (Code only
// when the desk sent one).
type jsonError struct {
	Error struct {
		Kind    string `json:"kind"` // refused, usage, timeout, unreachable
		Exit    int    `json:"exit"`
		Status  int    `json:"status,omitempty"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message"`
	} `json:"error"`
}

// reportJSON is report for -json: the same exit code, the error as a JSON object.
func reportJSON(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	// The exit code and the text are report's; only the form differs.
	var text bytes.Buffer
	code := report(&text, err)
	var out jsonError
	out.Error.Exit = code
	out.Error.Message = strings.TrimPrefix(strings.TrimSpace(text.String()), "deskctl: ")
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		out.Error.Kind, out.Error.Status, out.Error.Code, out.Error.Message = "refused", ae.Status, ae.Code, ae.Message
	case code == exitUsage:
		out.Error.Kind = "usage"
	case code == exitTimeout:
		out.Error.Kind = "timeout"
	case code == exitTransport:
		out.Error.Kind = "unreachable"
	default:
		out.Error.Kind = "refused"
	}
	b, _ := json.Marshal(out) // strings and ints: it always encodes
	_, _ = stderr.Write(append(b, '\n'))
	return code
}
