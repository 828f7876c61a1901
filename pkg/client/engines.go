package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-dev/corral/pkg/api"
)

// EnginesOptions ask GET /v1/engines for more than the supervisor's kept
// answer.
type EnginesOptions struct {
	// Refresh checks again even when the supervisor's answer is fresh.
	Refresh bool
	// Accepted also tries each credential against ModelEndpoint, or each
	// engine's default endpoint (network traffic).
	Accepted      bool
	ModelEndpoint string
}

// Engines describes the engines a session may run on: models, settings,
// and whether a session on each could start (docs/api.md, Engines).
func (c *Client) Engines(ctx context.Context, opts EnginesOptions) (*api.EnginesReply, error) {
	q := url.Values{}
	if opts.Refresh {
		q.Set("refresh", "true")
	}
	if opts.Accepted {
		q.Set("check", "accepted")
	}
	if opts.ModelEndpoint != "" {
		q.Set("modelEndpoint", opts.ModelEndpoint)
	}
	path := "/engines"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var r api.EnginesReply
	if err := c.call(ctx, http.MethodGet, path, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
