package schema

import (
	"reflect"
	"slices"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// Registry lists every shape that crosses a process boundary, as Go types:
// the one source the JSON Schema, the OpenAPI document and the TypeScript
// types are generated from. A change of the vocabulary is a change of a line
// here.
type Registry struct {
	// Types are named shapes the other lists do not reach.
	Types []any
	// Events are the session event types, each with its data's type.
	Events []Event
	// Commands are the control commands (command.Registry): each one's
	// fields and result come from its types, its description from the
	// request type's comment.
	Commands []command.Info
	// Messages are the supervisor <-> runner protocol's messages, an empty
	// one of each type (wire.Types).
	Messages map[wire.Type]wire.Message
	// Routes are the HTTP API's routes.
	Routes []Route
	// Enums are the values of named string types.
	Enums map[reflect.Type][]string
	// FieldEnums are the values of plain string fields, by "Type.json".
	FieldEnums map[string][]string
	// RawTypes are the Go types a json.RawMessage field holds, and
	// RawRefs the definition it holds (each element, for a slice), by
	// "Type.json".
	RawTypes map[string]reflect.Type
	RawRefs  map[string]string
	// WireForms map a type that encodes itself to the type of what it
	// writes.
	WireForms map[reflect.Type]reflect.Type
	// NeverNull are the slice and pointer fields, by "Type.json", that
	// encoding/json could write as null but whose producers never leave
	// nil.
	NeverNull map[string]bool
	// Names are the definition names of types whose Go names would
	// collide across packages or are not the names the contract publishes
	// (event.Type is EventType).
	Names map[reflect.Type]string
}

// Event is one event type and its data.
type Event struct {
	Type event.Type
	// Data is a value of the data's type; nil for an event without data.
	Data any
	// Doc says what the event means when its data type's comment does not.
	Doc string
}

// Route is one route of the HTTP API.
type Route struct {
	Method, Path string
	Summary      string
	Params       []Param
	// Body is the request body's type; nil for none.
	Body any
	// Status is the success status (200 when 0); Reply the success body's
	// type.
	Status int
	Reply  any
	// Stream, when set, is the definition of each item of an SSE or
	// NDJSON stream answered instead of a JSON body.
	Stream string
	// Frames, when set, is the definition of a WebSocket's text frames.
	Frames string
}

// Param is a query parameter or header of a route.
type Param struct {
	Name, In string // in: query, header
	Doc      string
	Schema   *Schema
	Repeated bool
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

var (
	str  = &Schema{Type: Types{"string"}}
	intg = &Schema{Type: Types{"integer"}}
	boo  = &Schema{Type: Types{"boolean"}}
)

func enum(vals ...string) *Schema { return &Schema{Type: Types{"string"}, Enum: vals} }

// streamParams are what every event stream takes.
var streamParams = []Param{
	{Name: "format", In: "query", Schema: enum("sse", "ndjson"), Doc: "sse (the default, or as Accept says) or ndjson"},
	{Name: "named", In: "query", Schema: boo, Doc: "false leaves SSE messages without an event name, so an EventSource's onmessage gets them all"},
}

// Default is the registry of Corral's contract.
func Default() *Registry {
	return &Registry{
		Types: []any{
			wire.Spec{}, api.Session{}, wire.Reply{}, wire.Error{}, api.ErrorReply{}, api.Error{}, command.Status{},
			api.SessionReply{}, api.SessionsReply{}, api.HealthReply{}, api.WaitReply{},
			api.FeedItem{}, api.TermFrame{}, graph.RunEvent{},
		},
		Events: []Event{
			{Type: event.SessionStarted, Data: event.SessionStartedData{}, Doc: "The session became live in a runner, with an empty log."},
			{Type: event.SessionResumed, Data: event.SessionStartedData{}, Doc: "The session became live in a runner, resuming its log."},
			{Type: event.UserMessage, Data: event.UserMessageData{}},
			{Type: event.TurnStarted, Data: event.TurnStartedData{}},
			{Type: event.AssistantDelta, Data: event.TextData{}, Doc: "The next piece of streamed assistant text."},
			{Type: event.AssistantText, Data: event.TextData{}, Doc: "One assistant message whole: the deltas since the last assistantText or tool call."},
			{Type: event.ToolStarted, Data: event.ToolStartedData{}},
			{Type: event.ToolFinished, Data: event.ToolFinishedData{}},
			{Type: event.AskOpened, Data: event.AskOpenedData{}},
			{Type: event.AskAnswered, Data: event.AskAnsweredData{}},
			{Type: event.SteerDelivered, Data: event.SteerData{}, Doc: "A steer reached the engine, at a tool boundary or natively."},
			{Type: event.SteerRequeued, Data: event.SteerData{}, Doc: "The turn ended before a tool boundary: the steer becomes the next message."},
			{Type: event.TurnEnded, Data: event.TurnEndedData{}},
			{Type: event.Stopped, Data: event.StoppedData{}},
			{Type: event.Failure, Data: event.FailureData{}},
			{Type: event.Usage, Data: event.UsageData{}, Doc: "The figures of one model call."},
			{Type: event.Context, Data: event.ContextData{}},
			{Type: event.Retry, Data: event.RetryData{}},
			{Type: event.HunkStaged, Data: event.HunkStagedData{}},
			{Type: event.HunkDecided, Data: event.HunkDecidedData{}},
			{Type: event.EditApplied, Data: event.EditAppliedData{}},
			{Type: event.ModeChanged, Data: event.ModeChangedData{}},
			{Type: event.GoalSet, Data: event.GoalSetData{}},
			{Type: event.GoalCleared, Doc: "The session's goal was cleared (clearGoal)."},
			{Type: event.GoalCheck, Data: event.GoalCheckData{}},
			{Type: event.SpendCapSet, Data: event.SpendCapSetData{}},
			{Type: event.Rotated, Data: event.RotatedData{}},
			{Type: event.Compacted, Data: event.CompactedData{}},
			{Type: event.QueueChanged, Data: event.QueueChangedData{}},
			{Type: event.LogRepaired, Data: event.LogRepairedData{}},
			{Type: event.Renamed, Data: event.RenamedData{}},
		},
		Commands: command.Registry,
		Messages: wire.Types(),

		Routes: routes(),
		Enums: map[reflect.Type][]string{
			typeOf[wire.Code]():               {string(wire.CodeRunnerCrashed), string(wire.CodeTimeout), string(wire.CodeNotFound), string(wire.CodeBadRequest), string(wire.CodeConflict), string(wire.CodeEngineError), string(wire.CodePermissionUnavailable), string(wire.CodeUnavailable), string(wire.CodeStorageUnavailable), string(wire.CodeUnauthorized), string(wire.CodeForbidden), string(wire.CodeProtocol), string(wire.CodeInternal)},
			typeOf[wire.State]():              {string(wire.StateStarting), string(wire.StateIdle), string(wire.StateWorking), string(wire.StateWaitingForApproval), string(wire.StateWaitingForReview), string(wire.StateFailed), string(wire.StateStopped), string(wire.StateStorageFailed)},
			typeOf[event.FailureCode]():       {string(event.FailEngineError), string(event.FailPermissionUnavailable), string(event.FailSignInExpired), string(event.FailContextFull), string(event.FailSpendCap), string(event.FailStalled), string(event.FailStorage)},
			typeOf[event.QueueChange]():       {string(event.QueueAdded), string(event.QueueStarted), string(event.QueueCancelled), string(event.QueueCleared)},
			typeOf[wire.Type]():               messageTypes(),
			typeOf[wire.Outcome]():            {string(wire.OutcomeRan), string(wire.OutcomeNotLive), string(wire.OutcomeNotReady)},
			typeOf[api.LifecycleType]():       words(api.LifecycleTypes()),
			typeOf[api.StreamMarkType]():      {string(api.MarkLive), string(api.MarkReset), string(api.MarkEnded)},
			typeOf[api.WaitFor]():             {string(api.WaitTurnEnd), string(api.WaitHuman), string(api.WaitIdle)},
			typeOf[gate.Decision]():           {string(gate.Allow), string(gate.Ask), string(gate.Deny)},
			typeOf[gate.Category]():           {string(gate.CategoryShell), string(gate.CategoryEdit), string(gate.CategoryRead), string(gate.CategoryNetwork), string(gate.CategoryWeb), string(gate.CategoryMCP)},
			typeOf[hunks.Kind]():              {string(hunks.KindModify), string(hunks.KindCreate), string(hunks.KindDelete)},
			typeOf[hunks.Op]():                {"context", "delete", "add"},
			typeOf[graph.Stage]():             stages(),
			typeOf[graph.NodeState]():         {string(graph.StatePending), string(graph.StateRunning), string(graph.StatePassed), string(graph.StateRejected), string(graph.StateFailed), string(graph.StateSkipped), string(graph.StateUnreachable)},
			typeOf[graph.RunState]():          {string(graph.RunOpen), string(graph.RunComplete), string(graph.RunBlocked)},
			typeOf[api.SettingType]():         {string(api.SettingString), string(api.SettingBoolean), string(api.SettingInteger), string(api.SettingNumber)},
			typeOf[api.CheckStatus]():         {string(api.CheckOK), string(api.CheckFailed), string(api.CheckSkipped)},
			typeOf[api.CredentialStoreKind](): {string(api.StoreKeyring), string(api.StoreFile)},
		},
		FieldEnums: map[string][]string{
			"Spec.mode":                  modes,
			"SetModeCommand.mode":        modes,
			"AnswerCommand.decision":     {command.DecisionAllow, command.DecisionDeny},
			"DecideHunkCommand.decision": {command.DecisionAccept, command.DecisionReject},
			"AskAnsweredData.decision":   {command.DecisionAllow, command.DecisionDeny},
			"HunkDecidedData.decision":   {command.DecisionAccept, command.DecisionReject},
			"AnswerResult.decision":      {command.DecisionAllow, command.DecisionDeny},
			"SteerResult.delivery":       {"native", "boundary", "queued"},
			"TurnEndedData.outcome":      {"done", "stopped", "failed", "interrupted"},
			"ToolFinishedData.outcome":   {"ok", "error", "denied", "partial", "stopped"},
			"RotatedData.reason":         {"fork", "clear"},
			"StagePolicy.mode":           modes,
			"TermFrame.type":             {api.FrameOpened, api.FrameExit, api.FrameError, api.FrameResize},
			"TermFrame.role":             {api.RoleOwner, api.RoleReadOnly},
			"TermOpenMessage.role":       {api.RoleOwner, api.RoleReadOnly},
			"TermOpenedMessage.role":     {api.RoleOwner, api.RoleReadOnly},
			"Lifecycle.reason":           {"idle", "room"},
			"EngineCheck.name":           {engine.CheckCLI, engine.CheckCredentials, engine.CheckAccepted},
			"EngineCLI.source":           {"config", "pinned", "PATH"},
			"CredentialItem.item":        creds.Items,
			"EngineCredential.item":      creds.Items,
		},
		RawTypes: map[string]reflect.Type{
			"AskOpenedData.parts": typeOf[[]gate.Part](),
			"SubmitBody.result":   typeOf[graph.Result](),
		},
		RawRefs: map[string]string{
			"FeedItem.event":   "SessionEvent",
			"WaitReply.events": "SessionEvent",
			"Message.event":    "SessionEvent",
			"Reply.result":     "",
			"RunEvent.data":    "",
			"Message.result":   "",
			"Message.args":     "",
		},
		WireForms: map[reflect.Type]reflect.Type{
			typeOf[hunks.Line](): typeOf[hunks.LineJSON](),
		},
		Names: map[reflect.Type]string{
			typeOf[event.Type]():   "EventType",
			typeOf[command.Name](): "Cmd",
			// An error as the HTTP API answers it, with its status.
			typeOf[api.Error](): "HTTPError",
		},
		NeverNull: map[string]bool{
			"WaitReply.events":       true, // supervisor.waiter.reply
			"SessionsReply.sessions": true, // supervisor.Manager.List
			"Status.queued":          true, // runner.status, and the status of a session without a runner
			"Status.openAsks":        true,
			"Status.pendingEdits":    true,
			// graph.StatusOf, graph.SummaryOf, graph.Run.Account,
			// graph.Run.Retry and the graph service make these.
			"RunStatus.stages":          true,
			"RunStatus.now":             true,
			"RunStatus.next":            true,
			"RunStatus.blocked":         true,
			"RunStatus.nodes":           true,
			"Summary.running":           true,
			"Account.shipped":           true,
			"Account.notShipped":        true,
			"OpenResponse.ready":        true,
			"NextResponse.ready":        true,
			"NextResponse.running":      true,
			"NextResponse.blocked":      true,
			"RetryResponse.unreachable": true,
			"RetryResponse.ready":       true,
			"ErrorReply.error":          true, // pkg/api.NewError, never nil
			// A command's pointer fields are how it tells a zero from none.
			"SetSpendCapCommand.spendCapUsd": true,
			"EnginesReply.engines":           true, // supervisor.Manager.Engines
			"Engine.checks":                  true,
			"Engine.credentials":             true,
			"Engine.models":                  true,
			"Engine.settings":                true,
			"CredentialsReply.items":         true, // httpapi.credentialsReply
			"CredentialItem.engines":         true,
		},
	}
}

var modes = []string{"review", "auto", "readonly"}

// stages are the graph stages' names.
func stages() []string {
	out := make([]string, len(graph.Stages))
	for i, s := range graph.Stages {
		out[i] = string(s)
	}
	return out
}

// messageTypes lists the protocol's message types, sorted.
func messageTypes() []string {
	var out []string
	for t := range wire.Types() {
		out = append(out, string(t))
	}
	slices.Sort(out)
	return out
}

// words returns the names of a list of string-typed constants.
func words[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
