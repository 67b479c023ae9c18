package client

import (
	"context"
	"net/http"
	"time"
)

// CodeMMPFrozen is the code of the 409 that refuses a quote while the maker's protection is
// frozen (Protection.Frozen): wait for FrozenUntil, or ResetProtection.
const CodeMMPFrozen = "MMP_FROZEN"

// EventMakerProtection is the stream event telling a maker its protection tripped; its
// payload decodes as ProtectionTripped.
const EventMakerProtection = "maker.protection"

// ProtectionSettings are a maker's protection limits (PUT /maker/protection): the fills and
// USD notional allowed within the trailing WindowSeconds (0 disables a limit; WindowSeconds
// 0 counts nothing), and how long a trip freezes quoting (0: until ResetProtection).
type ProtectionSettings struct {
	WindowSeconds  int     `json:"windowSeconds"`
	MaxFills       int     `json:"maxFills"`
	MaxNotionalUSD Decimal `json:"maxNotionalUsd"`
	FreezeSeconds  int     `json:"freezeSeconds"`
}

// Protection is a maker's protection as the desk shows it: the settings, whether quoting
// is frozen and until when (nil FrozenUntil while Frozen: until a reset), and what the
// trailing window counts now.
type Protection struct {
	ProtectionSettings
	Frozen              bool       `json:"frozen"`
	FrozenUntil         *time.Time `json:"frozenUntil"`
	FillsInWindow       int        `json:"fillsInWindow"`
	NotionalInWindowUSD Decimal    `json:"notionalInWindowUsd"`
}

// ProtectionTripped is the payload of maker.protection: which limit tripped ("fills" or
// "notional"), until when quoting is frozen (nil: until a reset), and the quotes revoked.
type ProtectionTripped struct {
	Triggered   string     `json:"triggered"`
	FrozenUntil *time.Time `json:"frozenUntil"`
	Revoked     []string   `json:"revoked"`
}

// Protection reads the caller's maker protection (GET /maker/protection).
func (c *Client) Protection(ctx context.Context) (*Protection, error) {
	return call[Protection](ctx, c, http.MethodGet, "/maker/protection", nil, nil, true)
}

// SetProtection replaces the caller's protection settings (PUT /maker/protection); a
// freeze in force stays.
func (c *Client) SetProtection(ctx context.Context, s ProtectionSettings) (*Protection, error) {
	if s.MaxNotionalUSD == "" {
		s.MaxNotionalUSD = "0"
	}
	return call[Protection](ctx, c, http.MethodPut, "/maker/protection", nil, s, true)
}

// ResetProtection ends the caller's protection freeze (POST /maker/protection/reset);
// without one it changes nothing.
func (c *Client) ResetProtection(ctx context.Context) (*Protection, error) {
	return call[Protection](ctx, c, http.MethodPost, "/maker/protection/reset", nil, nil, true)
}

// MakerProtection decodes a maker.protection payload.
func (e Event) MakerProtection() (*ProtectionTripped, error) {
	return decodeAs[ProtectionTripped](e, EventMakerProtection)
}
