package client

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MaxFractionDigits is the largest number of fractional digits a wire Decimal may carry.
const MaxFractionDigits = 10

// ErrInvalidDecimal is wrapped by every error about a string that is not a wire Decimal.
var ErrInvalidDecimal = errors.New("invalid decimal")

// Decimal is an amount or a price in the desk's wire form: a string matching
// ^\d+(\.\d{1,10})?$. The client never does arithmetic on it and never turns it into a
// float; callers that need arithmetic parse it with an exact decimal library of their own.
//
// The zero value (the empty string) stands for "absent": it encodes as JSON null and a JSON
// null decodes to it. Any other value must be valid: encoding or decoding an invalid one fails.
type Decimal string

// ParseDecimal checks that s is a wire Decimal and returns it as one.
func ParseDecimal(s string) (Decimal, error) {
	if err := validateDecimal(s); err != nil {
		return "", err
	}
	return Decimal(s), nil
}

// String returns the decimal's text.
func (d Decimal) String() string { return string(d) }

// IsZero reports whether d is absent (the empty string). It says nothing about the numeric
// value: "0" is not absent.
func (d Decimal) IsZero() bool { return d == "" }

// Validate returns an error wrapping ErrInvalidDecimal unless d is a wire Decimal.
func (d Decimal) Validate() error { return validateDecimal(string(d)) }

// MarshalJSON encodes d as a JSON string, or null when d is absent. It fails for an invalid
// decimal, so a request with a malformed amount never leaves the client.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if d == "" {
		return []byte("null"), nil
	}
	if err := validateDecimal(string(d)); err != nil {
		return nil, err
	}
	return json.Marshal(string(d))
}

// UnmarshalJSON decodes a JSON string holding a wire Decimal, or null as the absent value.
// A JSON number is refused: the wire never carries amounts as numbers.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: not a JSON string: %s", ErrInvalidDecimal, truncate(string(b), 40))
	}
	if err := validateDecimal(s); err != nil {
		return err
	}
	*d = Decimal(s)
	return nil
}

// validateDecimal checks s against ^\d+(\.\d{1,10})?$ without a regexp.
func validateDecimal(s string) error {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return fmt.Errorf("%w %q: must start with a digit", ErrInvalidDecimal, truncate(s, 40))
	}
	if i == len(s) {
		return nil
	}
	if s[i] != '.' {
		return fmt.Errorf("%w %q: unexpected character", ErrInvalidDecimal, truncate(s, 40))
	}
	frac := s[i+1:]
	if len(frac) == 0 || len(frac) > MaxFractionDigits {
		return fmt.Errorf("%w %q: needs 1 to %d fractional digits", ErrInvalidDecimal, truncate(s, 40), MaxFractionDigits)
	}
	for j := 0; j < len(frac); j++ {
		if frac[j] < '0' || frac[j] > '9' {
			return fmt.Errorf("%w %q: unexpected character", ErrInvalidDecimal, truncate(s, 40))
		}
	}
	return nil
}

// truncate cuts s to at most n bytes for inclusion in an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
