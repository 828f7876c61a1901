package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/corral-dev/corral/pkg/api"
)

// Credentials says where the supervisor keeps the credentials it hands its
// runners and which items are set (never a secret).
func (c *Client) Credentials(ctx context.Context) (*api.CredentialsReply, error) {
	var r api.CredentialsReply
	if err := c.call(ctx, http.MethodGet, "/credentials", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// SetCredential stores secret as the credential item (anthropic-api-key,
// openai-api-key, github-token) in the supervisor's keyring or credentials
// file. Sessions started from then on get it.
func (c *Client) SetCredential(ctx context.Context, item, secret string) (*api.CredentialsReply, error) {
	var r api.CredentialsReply
	if err := c.call(ctx, http.MethodPut, "/credentials/"+url.PathEscape(item), api.SetCredentialRequest{Secret: secret}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DeleteCredential removes the credential item; an item that is not set is
// a not_found error.
func (c *Client) DeleteCredential(ctx context.Context, item string) (*api.CredentialsReply, error) {
	var r api.CredentialsReply
	if err := c.call(ctx, http.MethodDelete, "/credentials/"+url.PathEscape(item), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
