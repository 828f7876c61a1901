package api

import "github.com/corral-dev/corral/pkg/hunks"

// WorkspaceStatus is a session's workspace as a shell shows it: where it
// is, how far it has gone from its base, and its whole diff against the
// base (docs/api.md, Workspaces).
type WorkspaceStatus struct {
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	BaseCommit string `json:"baseCommit"`
	Keep       bool   `json:"keep"`
	// Head is the branch's commit; Ahead counts its commits not in the
	// base commit; Dirty says the worktree has changes not committed.
	Head  string `json:"head"`
	Ahead int    `json:"ahead"`
	Dirty bool   `json:"dirty"`
	// Files is the diff of the worktree as it is (commits and changes
	// not committed) against the base commit, one edit per file.
	Files []*hunks.Edit `json:"files"`
	// Truncated is set when more files changed than Files holds.
	Truncated bool `json:"truncated,omitempty"`
}

// MergeResult is what a merge of a workspace into its base did.
type MergeResult struct {
	// Merged is true when the base branch now holds the workspace's
	// commits; Commit is then the base branch's new tip.
	Merged bool   `json:"merged"`
	Commit string `json:"commit,omitempty"`
	Base   string `json:"base"`
	// Conflicts names the files that would conflict; nothing was changed.
	Conflicts []string `json:"conflicts,omitempty"`
}

// WorkspaceReply is the body of GET /v1/sessions/{id}/workspace.
type WorkspaceReply struct {
	OK        bool             `json:"ok"`
	Workspace *WorkspaceStatus `json:"workspace"`
}

// CommitRequest is the body of POST /v1/sessions/{id}/workspace/commit.
type CommitRequest struct {
	Message string `json:"message"`
}

// CommitReply answers a commit with the new commit's id.
type CommitReply struct {
	OK     bool   `json:"ok"`
	Commit string `json:"commit"`
}

// MergeReply is the body of POST /v1/sessions/{id}/workspace/merge: ok,
// with merged false and the conflicting files when the merge would
// conflict (then nothing changed).
type MergeReply struct {
	OK     bool         `json:"ok"`
	Result *MergeResult `json:"result"`
}
