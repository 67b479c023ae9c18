package client

import (
	"context"
	"fmt"
	"net/http"
)

// Healthz polls the desk's public liveness probe (GET /healthz): nil once the desk's HTTP
// server answers 200. It sends no key, so a client waiting for a desk to come up is never
// counted as an authentication failure.
func (c *Client) Healthz(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	if err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, false, &out); err != nil {
		return err
	}
	if out.Status != "ok" {
		return fmt.Errorf("client: GET /healthz: status %q", out.Status)
	}
	return nil
}
