package client

import (
	"context"
	"net/url"
)

// call sends one request (see do) and returns its answer decoded into a new T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any, auth bool) (*T, error) {
	var out T
	if err := c.do(ctx, method, path, query, body, auth, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// list sends one request (see do) and returns its answer decoded as a list of T.
func list[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any, auth bool) ([]T, error) {
	var out []T
	if err := c.do(ctx, method, path, query, body, auth, &out); err != nil {
		return nil, err
	}
	return out, nil
}
