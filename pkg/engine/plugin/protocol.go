package plugin

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// The Corral engine protocol, version ProtocolVersion. The runner calls the
// plugin's service (StartArgs ... CancelArgs) on the connection go-plugin
// dispenses; the plugin calls the runner's Host service (EmitArgs,
// PermitArgs, TakeSteersArgs, CancelArgs) on a stream the MuxBroker opens.
// Both are served under the net/rpc name "Plugin". Values travel as gob.
//
// Application errors ride in the replies as *RemoteError so their type
// survives the crossing; an error returned by the RPC call itself means the
// transport or the protocol failed.

// Options are engine.StartOptions as they cross to the plugin: everything
// but Host and Logger, which the plugin side supplies.
type Options struct {
	SessionID     string
	Dir           string
	Cwd           string
	Model         string
	ModelEndpoint string
	Resume        string
	Scenario      string
	Credentials   map[string]string
	Env           []string
	Config        map[string]string
}

func optionsOf(o engine.StartOptions) Options {
	return Options{
		SessionID: o.SessionID, Dir: o.Dir, Cwd: o.Cwd, Model: o.Model, ModelEndpoint: o.ModelEndpoint,
		Resume: o.Resume, Scenario: o.Scenario, Credentials: o.Credentials, Env: o.Env, Config: o.Config,
	}
}

func (o Options) startOptions() engine.StartOptions {
	return engine.StartOptions{
		SessionID: o.SessionID, Dir: o.Dir, Cwd: o.Cwd, Model: o.Model, ModelEndpoint: o.ModelEndpoint,
		Resume: o.Resume, Scenario: o.Scenario, Credentials: o.Credentials, Env: o.Env, Config: o.Config,
	}
}

// Capabilities are the optional engine interfaces a plugin's engine
// implements.
type Capabilities struct {
	Steer   bool // engine.Steerer
	Fork    bool // engine.Forker
	Judge   bool // engine.Judge
	Compact bool // engine.Compactor
}

func capabilitiesOf(e engine.Engine) Capabilities {
	_, steer := e.(engine.Steerer)
	_, fork := e.(engine.Forker)
	_, judge := e.(engine.Judge)
	_, compact := e.(engine.Compactor)
	return Capabilities{Steer: steer, Fork: fork, Judge: judge, Compact: compact}
}

// StartArgs start the conversation. HostStream is the MuxBroker id on which
// the runner serves the Host.
type StartArgs struct {
	Call       uint64
	HostStream uint32
	Options    Options
}

// StartReply reports the conversation and what the engine can do.
type StartReply struct {
	Conversation string
	Capabilities Capabilities
	Err          *RemoteError
}

// TurnArgs run one turn.
type TurnArgs struct {
	Call  uint64
	Input engine.TurnInput
}

// TurnReply is how the turn ended.
type TurnReply struct {
	Result engine.TurnResult
	Err    *RemoteError
}

// CallArgs identify a call that takes only a context.
type CallArgs struct{ Call uint64 }

// SteerArgs deliver a steer.
type SteerArgs struct {
	Call uint64
	Text string
}

// JudgeArgs ask a side question.
type JudgeArgs struct {
	Call   uint64
	Prompt string
}

// JudgeReply answers it.
type JudgeReply struct {
	Answer string
	Usage  event.UsageData
	Err    *RemoteError
}

// ForkReply names the branch.
type ForkReply struct {
	Conversation string
	Err          *RemoteError
}

// ErrorReply is the reply of calls that return only an error.
type ErrorReply struct{ Err *RemoteError }

// CancelArgs cancel the context of call Call; the reply is a bool.
type CancelArgs struct{ Call uint64 }

// EmitArgs record an event; Data is the JSON of one of the wire.*Data types
// (see decodeEvent). The reply is a bool.
type EmitArgs struct {
	Type event.Type
	Data json.RawMessage
}

// PermitArgs ask the runner to decide a tool call.
type PermitArgs struct {
	Call     uint64
	ToolCall engine.ToolCall
}

// PermitReply is the runner's verdict.
type PermitReply struct{ Verdict engine.Verdict }

// TakeSteersArgs take the steers waiting at a tool boundary.
type TakeSteersArgs struct{ ToolID string }

// TakeSteersReply holds them.
type TakeSteersReply struct{ Texts []string }

// Kinds of RemoteError.
const (
	kindFailure  = "failure"
	kindNoTurn   = "noTurn"
	kindCanceled = "canceled"
	kindDeadline = "deadline"
	kindPlain    = "error"
)

// RemoteError is an error as it crosses the plugin boundary, keeping what
// callers branch on: an *engine.Failure's code and stderr, engine.ErrNoTurn,
// and context errors.
type RemoteError struct {
	Kind    string
	Code    event.FailureCode
	Message string
	Stderr  []string
	// Cause is the wrapped error's text (a Failure's Err).
	Cause string
}

// encodeError turns err into a RemoteError; nil stays nil.
func encodeError(err error) *RemoteError {
	if err == nil {
		return nil
	}
	var f *engine.Failure
	switch {
	case errors.As(err, &f):
		re := &RemoteError{Kind: kindFailure, Code: f.Code, Message: f.Message, Stderr: f.Stderr}
		if f.Err != nil {
			re.Cause = f.Err.Error()
		}
		return re
	case errors.Is(err, engine.ErrNoTurn):
		return &RemoteError{Kind: kindNoTurn, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &RemoteError{Kind: kindCanceled, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &RemoteError{Kind: kindDeadline, Message: err.Error()}
	}
	return &RemoteError{Kind: kindPlain, Message: err.Error()}
}

// knownFailureCode reports whether a plugin may fail with code; anything
// else becomes engineError.
func knownFailureCode(code event.FailureCode) bool {
	switch code {
	case event.FailEngineError, event.FailPermissionUnavailable, event.FailSignInExpired,
		event.FailContextFull, event.FailSpendCap, event.FailStalled:
		return true
	}
	return false
}

// err turns a RemoteError back into an error the runner can branch on:
// engine.ErrNoTurn itself, context errors, and *engine.Failure.
func (re *RemoteError) err() error {
	if re == nil {
		return nil
	}
	switch re.Kind {
	case kindNoTurn:
		return engine.ErrNoTurn
	case kindCanceled:
		return context.Canceled
	case kindDeadline:
		return context.DeadlineExceeded
	case kindFailure:
		f := &engine.Failure{Code: re.Code, Message: re.Message, Stderr: re.Stderr}
		if !knownFailureCode(f.Code) {
			f.Code = event.FailEngineError
		}
		if re.Cause != "" {
			f.Err = errors.New(re.Cause)
		}
		return f
	}
	return errors.New(re.Message)
}
