package client

import (
	"context"
	"net/http"

	"github.com/corral-dev/corral/pkg/api"
)

// Workspace returns session id's workspace with its diff against the base.
func (c *Client) Workspace(ctx context.Context, id string) (*api.WorkspaceStatus, error) {
	var out api.WorkspaceReply
	if err := c.call(ctx, http.MethodGet, "/sessions/"+id+"/workspace", nil, &out); err != nil {
		return nil, err
	}
	return out.Workspace, nil
}

// CommitWorkspace commits everything in session id's workspace.
func (c *Client) CommitWorkspace(ctx context.Context, id, message string) (string, error) {
	var out api.CommitReply
	if err := c.call(ctx, http.MethodPost, "/sessions/"+id+"/workspace/commit", api.CommitRequest{Message: message}, &out); err != nil {
		return "", err
	}
	return out.Commit, nil
}

// MergeWorkspace merges session id's workspace into its base branch.
func (c *Client) MergeWorkspace(ctx context.Context, id string) (*api.MergeResult, error) {
	var out api.MergeReply
	if err := c.call(ctx, http.MethodPost, "/sessions/"+id+"/workspace/merge", struct{}{}, &out); err != nil {
		return nil, err
	}
	return out.Result, nil
}
