// Package engine defines the one interface through which a Corral runner
// drives an agent engine (Claude Code, Codex, Copilot, the built-in script
// engine, or an out-of-process plugin), and the callbacks the runner offers
// back to it.
//
// The runner owns everything that must behave the same whatever the engine:
// the event log, the queue, steering at tool boundaries, the permission gate,
// hunk review, goals and spend caps. An engine only translates between its
// agent's protocol and these types.
package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Engine drives one conversation for one session. The runner calls Start
// once, then Turn for one user message at a time. Interrupt, and the optional
// Steer, may be called while Turn runs.
type Engine interface {
	// Start starts a conversation, or resumes the one named by
	// opts.Resume. It returns the engine's own conversation id, which the
	// runner stores so a later runner can resume it.
	Start(ctx context.Context, opts StartOptions) (conversationID string, err error)

	// Turn runs one turn on a user message and returns once the turn has
	// ended: done, stopped by Interrupt (Stopped set, nil error), or failed
	// (an error, preferably a *Failure).
	Turn(ctx context.Context, in TurnInput) (TurnResult, error)

	// Interrupt stops the running turn through the engine's own protocol,
	// leaving the conversation usable for the next turn. It is a no-op when
	// no turn runs.
	Interrupt(ctx context.Context) error

	// Close ends the conversation and releases every process the engine
	// started. It is safe to call more than once.
	Close() error
}

// Steerer is implemented by engines whose protocol delivers a steer into a
// running turn natively (Codex turn/steer, Copilot immediate mode). Engines
// without it receive steers at tool boundaries through Host.TakeSteers.
type Steerer interface {
	// Steer delivers text to the running turn. It returns ErrNoTurn when no
	// turn is running, and the runner queues the text as a send instead.
	Steer(ctx context.Context, text string) error
}

// Forker is implemented by engines that can branch a conversation.
type Forker interface {
	// Fork creates a branch of the current conversation and returns the
	// branch's id, which must be resumable from the engine's state folder
	// (Dir/engine). The runner then copies that folder into the new
	// session's folder, closes this engine, and starts a new one with
	// Resume set to the branch id there. The original conversation must
	// stay resumable under its own id from the original folder.
	Fork(ctx context.Context) (conversationID string, err error)
}

// Inheritor is implemented by engines that can start a conversation as a
// branch of another session's, so that a session naming a parent continues
// the parent's conversation itself instead of a handoff brief of it.
type Inheritor interface {
	// StartFork starts like Start, the new conversation a branch of the
	// conversation from, whose state the runner has copied from the
	// parent's folder into opts.Dir/engine beforehand. The parent's
	// conversation stays as it was.
	StartFork(ctx context.Context, opts StartOptions, from string) (conversationID string, err error)
}

// Presetter is implemented by engines that can honour a session's agent
// preset (wire.AgentPreset), given to Start in StartOptions.Agent. The
// runner refuses a session with a preset on an engine without it.
type Presetter interface {
	// CheckPreset says, before Start, whether the engine can honour p:
	// nil, or an error naming the part it cannot (the runner reports it
	// as bad_request).
	CheckPreset(p wire.AgentPreset) error
}

// Judge is implemented by engines that can answer a side question without
// adding it to the conversation (used for goal checks). Engines without it
// are asked through a regular turn.
type Judge interface {
	Judge(ctx context.Context, prompt string) (answer string, usage event.UsageData, err error)
}

// Compactor is implemented by engines with their own context compaction.
type Compactor interface {
	Compact(ctx context.Context) error
}

// ErrNoTurn is returned by Steer when no turn is running.
var ErrNoTurn = fmt.Errorf("no turn is running: %w", wire.ErrConflict)

// StartOptions configure a conversation.
type StartOptions struct {
	// SessionID is Corral's id for the session.
	SessionID string
	// Dir is the session folder; an engine keeps its own state (its CLI's
	// home and config folders) under Dir/engine.
	Dir string
	// Cwd is the worktree the agent works in.
	Cwd string
	// Model and ModelEndpoint select the model and an alternative API base
	// URL (a gateway, or the fake model server in tests). Empty means the
	// engine's default.
	Model         string
	ModelEndpoint string
	// Resume is the engine conversation id to continue; empty starts anew.
	Resume string
	// Scenario is the script engine's scenario file.
	Scenario string
	// Credentials holds secrets by item name (anthropic-api-key,
	// openai-api-key, github-token). Engines must take credentials only
	// from here, never from the inherited environment.
	Credentials map[string]string
	// Env is the base environment for engine children, already stripped
	// of every provider credential variable.
	Env []string
	// Config holds engine-specific settings (for example "path": the CLI
	// binary to run).
	Config map[string]string
	// Agent is the session's agent preset, nil for none; only engines
	// that implement Presetter (and accepted it) are given one.
	Agent *wire.AgentPreset
	// Host is the runner's side of the conversation.
	Host Host
	// Logger logs to the runner's stderr.
	Logger *zap.Logger
}

// TurnInput is one user message.
type TurnInput struct {
	ID   string
	Text string
	// Kind is send, goalCheck, or loop; engines treat them alike.
	Kind string
}

// TurnResult is how a turn ended.
type TurnResult struct {
	Stopped bool
	// Text is the final assistant text of the turn.
	Text string
	// Usage totals the turn. When the engine reports an exact cost
	// (Usage.Estimated false, CostUSD set) the runner takes it over the
	// sum of the usage events.
	Usage event.UsageData
	// HasUsage says Usage is set.
	HasUsage bool
	// Conversation, when set, is the engine's new conversation id: the
	// turn cleared the conversation through the engine's own command
	// (Claude Code's /clear) and the engine goes on in a new one. The
	// runner continues the session under a new session id (a rotated
	// event with reason "clear") whose engine resumes this conversation.
	Conversation string
}

// Host is what a runner offers an engine. Its methods are safe for
// concurrent use.
type Host interface {
	// Emit records an event. Engines emit assistantDelta, assistantText,
	// toolStarted, toolFinished, usage, context and retry; the runner owns
	// every other type. data is one of the wire.*Data types.
	Emit(typ event.Type, data any)

	// Permit decides a tool call: the gate, a human's answer to an ask,
	// hunk review of an edit. It blocks until decided or ctx ends. The
	// engine must run the tool only when the verdict allows it.
	Permit(ctx context.Context, call ToolCall) Verdict

	// TakeSteers returns the steers waiting for a tool boundary and marks
	// them delivered. Engines without native steering call it after each
	// tool call finishes and hand the text to the model with the tool's
	// result. toolID names the boundary for the steerDelivered event.
	TakeSteers(toolID string) []string
}

// Kind classifies a tool call for the gate.
type Kind string

// Tool call kinds.
const (
	KindShell Kind = "shell" // Command
	KindEdit  Kind = "edit"  // Edit: create, change or delete a file
	KindRead  Kind = "read"  // Path: read a file or search a folder
	KindFetch Kind = "fetch" // URL: web fetch or search
	KindMCP   Kind = "mcp"   // Server, MCPTool
	KindOther Kind = "other" // anything else; the gate asks
)

// ToolCall is one tool call an engine wants to run.
type ToolCall struct {
	// ID is the engine's id for the call.
	ID string
	// Tool is the engine's own tool name (Bash, Write, apply_patch...).
	Tool string
	Kind Kind

	Command string
	Path    string
	URL     string
	Server  string
	MCPTool string
	Edit    *EditProposal
	// Input is the tool's raw input, for display.
	Input json.RawMessage
}

// EditProposal is a proposed change of one file, as whole contents so the
// runner can stage it as hunks.
type EditProposal struct {
	// Path is absolute.
	Path string
	// Before is the file as the engine saw it; Existed is false for a
	// new file.
	Before  []byte
	Existed bool
	// After is the proposed content; Delete is set to remove the file.
	After  []byte
	Delete bool
}

// Verdict answers Permit.
type Verdict struct {
	Allow bool
	// Message tells the model why a call was refused: the gate's reason,
	// the reviewer's notes, or which hunks the runner applied itself.
	Message string
	// Applied is set when the runner wrote part of an edit itself; the
	// call is refused (Allow false) and Message lists what was applied.
	Applied bool
}

// Failure is an engine failure with a stable code for the failure event.
type Failure struct {
	Code    event.FailureCode
	Message string
	// Stderr holds the engine process's last stderr lines, if any.
	Stderr []string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err != nil {
		return fmt.Sprintf("%s: %v", f.Message, f.Err)
	}
	return f.Message
}

func (f *Failure) Unwrap() error { return f.Err }

// Is makes every Failure match wire.ErrEngine.
func (f *Failure) Is(target error) bool { return target == wire.ErrEngine }

// Factory builds a fresh Engine for a session.
type Factory func() Engine
