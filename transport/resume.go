package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// sinceParam is the stream upgrade's query parameter that resumes a stream after the
// event the client processed last (docs/stream.md, "Resume").
const sinceParam = "since"

// maxSinceDigits bounds the since value: a uint64 has at most 20 decimal digits.
const maxSinceDigits = 20

// Resumer is what a Desk implements to serve a stream resume: OpenSocket's report of a
// socket that asks for the retained events numbered above since. The loop implements it.
type Resumer interface {
	ResumeSocket(ctx context.Context, socket uint64, keyHash string, cancelOnDisconnect bool, since uint64) error
}

// errNoResume is the answer of a desk that cannot serve a resume.
var errNoResume = errors.New("this desk cannot resume a stream")

// streamSince reads ?since= of a stream upgrade: absent is no resume; otherwise it must be
// one plain decimal number from 0 to 18446744073709551615, with no sign, no leading zero
// (but "0" itself), no spaces, given once. Anything else is an error, answered 400 before
// the socket opens.
func streamSince(r *http.Request) (resume bool, since uint64, err error) {
	vals, ok := r.URL.Query()[sinceParam]
	if !ok {
		return false, 0, nil
	}
	if len(vals) != 1 {
		return false, 0, fmt.Errorf("%s given %d times; give it once", sinceParam, len(vals))
	}
	v := vals[0]
	if !plainDecimal(v) {
		return false, 0, fmt.Errorf("%s must be the last seq processed, a non-negative integer without sign or leading zeros, not %q", sinceParam, clip(v))
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("%s %q is above the largest seq, 18446744073709551615", sinceParam, clip(v))
	}
	return true, n, nil
}

// plainDecimal reports whether s is 1 to maxSinceDigits ASCII digits without a leading zero
// (but "0").
func plainDecimal(s string) bool {
	if len(s) == 0 || len(s) > maxSinceDigits || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// clip shortens a client's value quoted in an error.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
