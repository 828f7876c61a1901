package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-dev/corral/internal/graph/graphapi"
)

// GraphStatus describes one graph run (GET /v1/graphs/{run}).
func (c *Client) GraphStatus(ctx context.Context, run string) (*graphapi.StatusReply, error) {
	var r graphapi.StatusReply
	if err := c.call(ctx, http.MethodGet, "/graphs/"+url.PathEscape(run), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Graphs lists every graph run (GET /v1/graphs).
func (c *Client) Graphs(ctx context.Context) (*graphapi.StatusReply, error) {
	var r graphapi.StatusReply
	if err := c.call(ctx, http.MethodGet, "/graphs", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
