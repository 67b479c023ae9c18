package machine

import (
	"fmt"
	"time"
)

// TimeLayout is the wire form of every timestamp the desk writes: ISO-8601 UTC with
// milliseconds and a Z suffix.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in the wire form, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads an RFC 3339 timestamp (a Z suffix or a zone offset, optional fractional
// seconds) and returns it in UTC, truncated to the millisecond the wire can show.
func ParseTime(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("timestamp is too long (%d bytes)", len(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339 (for example 2026-01-02T15:04:05Z)", s)
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

// WireTime is a timestamp that marshals in the wire form.
type WireTime time.Time

// MarshalJSON writes the wire form.
func (t WireTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + FormatTime(time.Time(t)) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 timestamp.
func (t *WireTime) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("a timestamp must be a JSON string")
	}
	v, err := ParseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	*t = WireTime(v)
	return nil
}
