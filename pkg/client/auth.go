package client

import (
	"context"
	"net/http"

	"github.com/corral-dev/corral/pkg/api"
)

// NewLoginCode mints a one-time login code, which a web page exchanges for
// a session cookie (POST /v1/auth/session with {"code": ...}). Only the
// owner mints them: over the unix socket, or with the bearer token.
func (c *Client) NewLoginCode(ctx context.Context) (*api.LoginCodeReply, error) {
	var r api.LoginCodeReply
	if err := c.call(ctx, http.MethodPost, "/auth/code", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// NewTicket mints a single-use ticket for one event stream or terminal
// WebSocket (?ticket=), for a caller that cannot send headers.
func (c *Client) NewTicket(ctx context.Context) (*api.TicketReply, error) {
	var r api.TicketReply
	if err := c.call(ctx, http.MethodPost, "/auth/ticket", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
