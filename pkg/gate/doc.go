// Package gate is the permission gate every tool call of every engine
// passes before it runs: shell commands, file edits, file reads, web
// fetches and MCP tool calls.
//
// A [Policy] is assembled from three layers by [LoadPolicy] (built-in
// defaults, the project's .corral/settings.json, the session's own
// settings). [New] binds a policy to a worktree, and [Gate.Judge] turns a
// [Request] into a [Judgement]: allow, ask or deny, with a category and a
// reason an approval UI can show as is.
//
// Shell commands are parsed with mvdan.cc/sh (bash dialect) and judged
// simple command by simple command; a compound command is allowed only
// when every part is. Paths are judged on their real location after
// resolving symlinks, so a symlink inside the worktree that points
// outside it is outside.
//
// The gate is deterministic for a given policy, worktree and file system
// state, safe for concurrent use, and never panics. The rules, and the
// reasoning behind them, are documented in docs/gate.md.
package gate
