package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Stream tickets (docs/stream.md, "Browser access"): a browser's WebSocket cannot send
// X-API-Key, so it asks POST /maker/stream/ticket for a one-shot ticket and opens
// GET /maker/stream?ticket=T. A Go client sends the header and needs none of this; it is
// here for tools and tests that act as a browser does (StreamOptions.Ticket).

// StreamTicket is the answer of POST /maker/stream/ticket: a one-shot ticket for the
// caller's stream, good until ExpiresAt (30 s).
type StreamTicket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// StreamTicket asks the desk for a one-shot stream ticket (POST /maker/stream/ticket).
func (c *Client) StreamTicket(ctx context.Context) (*StreamTicket, error) {
	return call[StreamTicket](ctx, c, http.MethodPost, "/maker/stream/ticket", nil, nil, true)
}

// StreamURLWithTicket returns the stream's address carrying ticket (?ticket=), which
// authenticates the upgrade instead of X-API-Key.
func (c *Client) StreamURLWithTicket(ticket string) string {
	return withQuery(c.StreamURL(), "ticket="+url.QueryEscape(ticket))
}

// ticketed rewrites one connect's address and header to authenticate with a fresh ticket
// instead of the key (StreamOptions.Ticket): the header goes, ?ticket= comes.
func (s *Stream) ticketed(ctx context.Context, addr string, hdr http.Header) (string, error) {
	t, err := s.c.StreamTicket(ctx)
	if err != nil {
		return "", err
	}
	hdr.Del(APIKeyHeader)
	return withQuery(addr, "ticket="+url.QueryEscape(t.Ticket)), nil
}
