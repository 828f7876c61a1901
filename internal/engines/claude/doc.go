// Package claude drives the Claude Code CLI behind engine.Engine.
//
// It speaks the CLI's stream-json control protocol directly (the protocol
// the official Agent SDK uses): NDJSON frames on stdio, control requests and
// responses in both directions, hook callbacks and can_use_tool permission
// requests. No Node runtime and no SDK are involved.
//
// Corral's gate decides every tool call: a PreToolUse hook answers "ask" for
// every tool, so the CLI sends can_use_tool for each call whatever the
// user's own Claude settings allow, and can_use_tool is answered from
// Host.Permit. Edits are offered to the gate as whole-file proposals
// computed the way Claude's own Edit and Write tools would apply them, so the
// runner can stage them as hunks.
//
// One long-lived CLI process serves a session; a crashed or killed process
// is replaced on the next turn with --resume, so a conversation survives its
// process. docs/engines-claude.md describes flags, environment, credentials
// and the mapping of every capability.
package claude
