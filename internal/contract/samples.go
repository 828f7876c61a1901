// Package contract holds the contract test of Corral's API, both ways: Go
// encodes a golden sample of every shape (every event type, every command
// and its result, every route's bodies, every error code), checked in under
// testdata/go; the TypeScript client's tests type-check those samples
// against the generated types and decode them through the client; what
// TypeScript writes back (testdata/ts, written by those tests) is validated
// against the JSON Schema and decoded here.
package contract

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/corral-dev/corral/internal/schema"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/gate"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// Sample is one golden value and the definition it must be.
type Sample struct {
	// Name is the sample's file name, without .json.
	Name string `json:"name"`
	// Def is the definition it is: a $defs name, or "CommandResults.cmd"
	// for a command's result.
	Def   string `json:"def"`
	Value any    `json:"-"`
}

var ts = time.Date(2026, 11, 30, 10, 4, 5, 123456000, time.UTC)

func logged(seq int64, typ event.Type, data any) event.Event {
	ev := event.Event{Seq: seq, TS: ts.Add(time.Duration(seq) * time.Millisecond), Type: typ}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		ev.Data = raw
	}
	return ev
}

func ptr[T any](v T) *T { return &v }

var (
	usage = event.UsageData{InputTokens: 3731, OutputTokens: 44, CacheReadTokens: 1024, CostUSD: 0.0119, Estimated: true, Model: "script-1"}
	edit  = &hunks.Edit{Path: "hello.txt", Kind: hunks.KindModify, Added: 1, Removed: 1, OldSize: 12, NewSize: 13,
		OldBlob: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", NewBlob: "8ab686eafeb1f44702738c8b0f24f2567c36da6d",
		Hunks: []hunks.Hunk{{ID: "h1", Header: "@@ -1,2 +1,2 @@", OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2, Added: 1, Removed: 1,
			Lines: []hunks.Line{{Op: hunks.OpDelete, Text: "hello", EOL: "\n"}, {Op: hunks.OpAdd, Text: "hello, world", EOL: "\n"}, {Op: hunks.OpContext, Text: "bye \xff", EOL: ""}}}}}
	status = command.Status{Session: "3f2a9c0d1e4b", Engine: "script", State: wire.StateWaitingForApproval, Activity: "waiting for approval: Bash",
		Mode: "review", Turn: 2, Queued: []event.Queued{{ID: "m7", Text: "then run the tests"}}, OpenAsks: []string{"a5"}, PendingEdit: []string{},
		Goal: "tests pass", Usage: usage, LastSeq: 57, SpendCapUSD: 2}
	spec = wire.Spec{ID: "3f2a9c0d1e4b", Engine: "script", Cwd: "/state/workspaces/app-9afafddc", Scenario: "demo", Mode: "review",
		Workspace: &wire.Workspace{Base: "main", Branch: "corral/9afafddc", Repo: "/home/me/app", BaseCommit: "156f8f96a1b2c3d4e5f60718293a4b5c6d7e8f90", Path: "/state/workspaces/app-9afafddc"},
		Allow:     []string{"Bash(go test:*)"}, SpendCapUSD: 5, EngineSession: "script-3f2a9c0d1e4b",
		Goal: &wire.Goal{Text: "tests pass; lint is clean"}, GoalLimit: 5, CompactAt: 90}
	crash = &api.Error{Message: "runner for session 3f2a9c0d1e4b was killed by signal killed", Code: wire.CodeRunnerCrashed, StatusCode: 502,
		Detail: &wire.Crash{ExitCode: -1, Signal: "killed", Stderr: []string{"runner wrapper: starting pid 4242"}}}
	session = api.Session{ID: "3f2a9c0d1e4b", Spec: spec, Live: true, Status: &status, UpdatedAt: ts, LastCrash: crash}
	goalChk = event.GoalCheckData{Goal: "tests pass; lint is clean", Clauses: []event.GoalClause{{Clause: "tests pass", Met: true, Evidence: "go test ./... passed"},
		{Clause: "lint is clean", Met: false, Evidence: "staticcheck reports 2 issues"}}, Met: 1, Total: 2, Summary: "unmet · 1/2", Attempt: 1, Limit: 5, By: "judge"}
	queued = event.Queued{ID: "m7", Text: "then run the tests"}
)

// events is one event of every type, in the order a session could log them.
func events() []event.Event {
	return []event.Event{
		logged(1, event.SessionStarted, event.SessionStartedData{Engine: "script", Cwd: "/home/me/project", Mode: "review", Model: "script-1", EngineSession: "script-3f2a9c0d1e4b"}),
		logged(2, event.SessionResumed, event.SessionStartedData{Engine: "script", Cwd: "/home/me/project", Mode: "review", Parent: "9b0d4f11a2c3", Unattended: true}),
		logged(3, event.UserMessage, event.UserMessageData{ID: "m4", Text: "add a README", Kind: "send", Queued: true}),
		logged(4, event.QueueChanged, event.QueueChangedData{Change: event.QueueAdded, MessageID: "m4", Queued: []event.Queued{{ID: "m4", Text: "add a README"}}}),
		logged(5, event.TurnStarted, event.TurnStartedData{Turn: 2, MessageID: "m4", Text: "add a README"}),
		logged(6, event.AssistantDelta, event.TextData{Text: "Writing "}),
		logged(7, event.AssistantText, event.TextData{Text: "Writing the README now."}),
		logged(8, event.ToolStarted, event.ToolStartedData{ToolID: "tool-1", Tool: "Bash", Kind: "shell", Summary: "ls -la", Command: "ls -la"}),
		logged(9, event.AskOpened, event.AskOpenedData{AskID: "a5", ToolID: "tool-1", Tool: "Bash", Category: "shell", Reason: "runs a command the policy does not allow",
			Command: "ls -la && curl example.invalid", Parts: mustJSON([]gate.Part{{Command: "ls -la", Decision: gate.Allow, Category: gate.CategoryShell, Reason: "reads only"},
				{Command: "curl example.invalid", Decision: gate.Ask, Category: gate.CategoryNetwork, Reason: "reaches the network"}})}),
		logged(10, event.AskAnswered, event.AskAnsweredData{AskID: "a5", Decision: command.DecisionAllow, Note: "fine", By: "user"}),
		logged(11, event.ToolFinished, event.ToolFinishedData{ToolID: "tool-1", Tool: "Bash", Outcome: "ok", DurationMS: 12, ExitCode: ptr(0), Output: "total 8", Gate: &event.GateVerdict{Decision: "allow", Category: "shell"}}),
		logged(12, event.SteerDelivered, event.SteerData{Text: "use British spelling", ToolID: "tool-1"}),
		logged(13, event.HunkStaged, event.HunkStagedData{EditID: "e2", ToolID: "tool-2", Path: "hello.txt", Edit: edit}),
		logged(14, event.HunkDecided, event.HunkDecidedData{EditID: "e2", HunkID: "h1", Decision: command.DecisionAccept, By: "user"}),
		logged(15, event.EditApplied, event.EditAppliedData{EditID: "e2", Path: "hello.txt", By: "engine", Hunks: []string{"h1"}, Added: 1, Removed: 1}),
		logged(16, event.Usage, usage),
		logged(17, event.Context, event.ContextData{UsedTokens: 4755, WindowTokens: 200000, Percent: 2.38}),
		logged(18, event.Retry, event.RetryData{Attempt: 1, MaxRetries: 3, DelayMS: 500, Error: "529 overloaded"}),
		logged(19, event.SteerRequeued, event.SteerData{Text: "and the tests"}),
		logged(20, event.TurnEnded, event.TurnEndedData{Turn: 2, Outcome: "done", DurationMS: 1834, Usage: usage, Files: 1, Added: 1, Removed: 1, Summary: "1 file · +1 −1"}),
		logged(21, event.GoalSet, event.GoalSetData{Goal: "tests pass; lint is clean", Clauses: []string{"tests pass", "lint is clean"}}),
		logged(22, event.GoalCheck, goalChk),
		logged(23, event.GoalCleared, nil),
		logged(24, event.ModeChanged, event.ModeChangedData{Mode: "auto"}),
		logged(25, event.SpendCapSet, event.SpendCapSetData{SpendCapUSD: 2.5}),
		logged(26, event.Compacted, event.CompactedData{BeforePercent: 96.5}),
		logged(27, event.Failure, event.FailureData{Code: event.FailSignInExpired, Message: "the model endpoint rejected the credentials",
			Action: "sign in again: claude /login", Stderr: []string{"401 Unauthorized"}}),
		logged(28, event.Stopped, event.StoppedData{Reason: "user", InterruptedTurn: true, DeniedAsks: 1, ClearedQueue: 2}),
		logged(29, event.Rotated, event.RotatedData{From: "3f2a9c0d1e4b", To: "3f2a9c0d1e4b-f1", Reason: "fork"}),
		logged(30, event.LogRepaired, event.LogRepairedData{File: "events.jsonl.damaged", Ranges: []event.DamagedRange{{Offset: 18234, Length: 41, Reason: "not JSON"}},
			RangeCount: 1, Bytes: 41, LastValidSeq: 29}),
		logged(31, event.Renamed, event.RenamedData{Title: "Fix the flaky test"}),
	}
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// commands is every command with a sample of its result.
func commands() []struct {
	cmd    command.Request
	result any
} {
	return []struct {
		cmd    command.Request
		result any
	}{
		{command.Send{Text: "add a README"}, queued},
		{command.Steer{Text: "use British spelling"}, command.SteerResult{Delivery: "queued", MessageID: "m8"}},
		{command.Stop{}, event.StoppedData{Reason: "user", InterruptedTurn: true, DeniedAsks: 1}},
		{command.Answer{AskID: "a5", Decision: command.DecisionDeny, Note: "not the network"}, command.AnswerResult{AskID: "a5", Decision: command.DecisionDeny}},
		{command.GetStatus{}, status},
		{command.DecideHunk{EditID: "e2", HunkID: "h1", Decision: command.DecisionReject, Note: "keep it short"},
			event.HunkDecidedData{EditID: "e2", HunkID: "h1", Decision: command.DecisionReject, Note: "keep it short", By: "user"}},
		{command.SetMode{Mode: "auto"}, event.ModeChangedData{Mode: "auto"}},
		{command.SetGoal{Goal: "tests pass; lint is clean"}, event.GoalSetData{Goal: "tests pass; lint is clean", Clauses: []string{"tests pass", "lint is clean"}}},
		{command.GetGoal{}, command.GoalState{Goal: "tests pass", Clauses: []string{"tests pass"}, Attempts: 1, Limit: 20}},
		{command.ClearGoal{}, command.ClearGoalResult{Cleared: true}},
		{command.MarkGoalDone{}, event.GoalCheckData{Goal: "tests pass", Clauses: []event.GoalClause{{Clause: "tests pass", Met: true, Evidence: "a person's word"}},
			Met: 1, Total: 1, Holds: true, Summary: "holds · 1/1", By: "user"}},
		{command.SetSpendCap{SpendCapUSD: ptr(2.5)}, event.SpendCapSetData{SpendCapUSD: 2.5}},
		{command.ForkSession{}, command.ForkResult{From: "3f2a9c0d1e4b", To: "3f2a9c0d1e4b-f1"}},
		{command.Rename{Title: "Fix the flaky test"}, command.RenameResult{Title: "Fix the flaky test"}},
		{command.CancelQueued{MessageID: "m7"}, queued},
	}
}

// Samples returns every golden sample.
func Samples() []Sample {
	var out []Sample
	add := func(name, def string, v any) { out = append(out, Sample{Name: name, Def: def, Value: v}) }
	for _, ev := range events() {
		add("event."+string(ev.Type), "SessionEvent", ev)
	}
	for _, c := range commands() {
		raw, err := command.Marshal(c.cmd)
		if err != nil {
			panic(err)
		}
		add("command."+string(c.cmd.Cmd()), "Command", json.RawMessage(raw))
		add("result."+string(c.cmd.Cmd()), "CommandResults."+string(c.cmd.Cmd()), c.result)
	}
	for _, code := range schema.Defs()["Code"].Enum {
		e := api.NewError(wire.Errorf(wire.Code(code), "a %s failure", code))
		if code == string(wire.CodeRunnerCrashed) {
			e = crash
		}
		add("error."+code, "ErrorReply", api.ErrorReply{Error: e})
	}
	// The routes' bodies.
	created := spec
	created.ID, created.EngineSession, created.Cwd = "", "", "/home/me/app"
	created.Workspace = &wire.Workspace{Base: "main", Branch: "corral/9afafddc"}
	created.Agent = &wire.AgentPreset{Name: "reviewer", Instructions: "Review only; never edit files.", Tools: []string{"Read", "Grep", "Glob"}}
	add("route.health.reply", "HealthReply", api.HealthReply{OK: true, Proto: wire.ProtocolVersion, LiveSessions: 3,
		Version: "v0.4.0-12-g869b98d", Revision: "869b98d6f0e3a1c2b4d5e6f708192a3b4c5d6e7f", Go: "go1.26.8", Ready: true})
	add("route.health.notReady", "HealthReply", api.HealthReply{OK: true, Proto: wire.ProtocolVersion,
		Version: "v0.4.0", Go: "go1.26.8", NotReady: []string{"the supervisor is shutting down"}})
	add("route.createSession.request", "Spec", created)
	add("route.createSession.reply", "SessionReply", api.SessionReply{OK: true, Session: &session})
	add("route.listSessions.reply", "SessionsReply", api.SessionsReply{OK: true, Sessions: []api.Session{session, {ID: "9b0d4f11a2c3",
		Spec: wire.Spec{ID: "9b0d4f11a2c3", Engine: "codex", EngineConfig: wire.EngineConfig{"auth": "login", "requestMaxRetries": 4.0, "inputPricePerMTok": 1.5}}, UpdatedAt: ts}}})
	add("route.getSession.reply", "SessionReply", api.SessionReply{OK: true, Session: &api.Session{ID: "9b0d4f11a2c3", Spec: wire.Spec{ID: "9b0d4f11a2c3", Engine: "codex"}, UpdatedAt: ts}})
	add("route.deleteSession.reply", "Reply", wire.Reply{OK: true})
	add("route.command.reply", "Reply", wire.OKReply(queued))
	add("route.wait.reply", "WaitReply", api.WaitReply{OK: true, For: api.WaitTurnEnd, Met: true,
		Events: []json.RawMessage{mustJSON(events()[19])}, LastSeq: 20, Status: &status})
	add("route.wait.timedOut", "WaitReply", api.WaitReply{OK: true, For: api.WaitIdle, Events: []json.RawMessage{}, LastSeq: 57, Status: &status,
		Lifecycle: &api.Lifecycle{Type: api.LifeFailed, TS: ts, Error: crash}})
	add("route.feed.backlog", "FeedItem", api.FeedItem{Session: "3f2a9c0d1e4b", Event: mustJSON(events()[0])})
	add("route.feed.event", "FeedItem", api.FeedItem{Cursor: "7c1e02aa-1041", Session: "3f2a9c0d1e4b", Event: mustJSON(events()[7])})
	for i, l := range []api.Lifecycle{
		{Type: api.LifeCreated, TS: ts, Spec: &spec}, {Type: api.LifeLive, TS: ts}, {Type: api.LifeReaped, TS: ts, Reason: "idle"},
		{Type: api.LifeFailed, TS: ts, Error: crash}, {Type: api.LifeDeleted, TS: ts},
		{Type: api.LifeStorageFailed, TS: ts, Error: &api.Error{Code: wire.CodeStorageUnavailable, StatusCode: 507,
			Message: "session 3f2a9c0d1e4b is storageFailed: its event log cannot be written (is the state folder's disk full?); it takes no commands until it has room"}},
		{Type: api.LifeStorageRestored, TS: ts},
	} {
		add("route.feed."+string(l.Type), "FeedItem", api.FeedItem{Cursor: "7c1e02aa-" + string(rune('0'+i)), Session: "3f2a9c0d1e4b", Lifecycle: &l})
	}
	for _, m := range []api.StreamMark{
		{Type: api.MarkLive}, {Type: api.MarkReset, Reason: "the cursor is not from this run of the supervisor"},
		{Type: api.MarkEnded, Error: api.NewError(wire.Errorf(wire.CodeUnavailable, "the supervisor is shutting down"))},
	} {
		add("route.feed."+string(m.Type), "FeedItem", api.FeedItem{Cursor: "7c1e02aa-1050", Stream: &m})
	}
	ws := api.WorkspaceStatus{Path: "/state/workspaces/app-9afafddc", Branch: "corral/9afafddc", Base: "main",
		BaseCommit: "156f8f96a1b2c3d4e5f60718293a4b5c6d7e8f90", Head: "083c561ca1b2c3d4e5f60718293a4b5c6d7e8f90", Ahead: 1, Files: []*hunks.Edit{edit}}
	add("route.workspace.reply", "WorkspaceReply", api.WorkspaceReply{OK: true, Workspace: &ws})
	add("route.workspaceCommit.request", "CommitRequest", api.CommitRequest{Message: "Add notes"})
	add("route.workspaceCommit.reply", "CommitReply", api.CommitReply{OK: true, Commit: "083c561ca1b2c3d4e5f60718293a4b5c6d7e8f90"})
	add("route.workspaceMerge.reply", "MergeReply", api.MergeReply{OK: true, Result: &api.MergeResult{Merged: true, Commit: "9d1e2f3a4b5c6d7e8f90a1b2c3d4e5f607182930", Base: "main"}})
	add("route.workspaceMerge.conflict", "MergeReply", api.MergeReply{OK: true, Result: &api.MergeResult{Base: "main", Conflicts: []string{"a.txt"}}})
	add("route.signIn.request", "SignInRequest", api.SignInRequest{Code: "q1Zk8mW3bR0xTn5vYc7pLd2sGh4jKf6aE9uXo1iNw0A"})
	add("route.signIn.reply", "SignInReply", api.SignInReply{OK: true, ExpiresAt: ts.Add(12 * time.Hour)})
	add("route.signOut.reply", "Reply", wire.Reply{OK: true})
	add("route.ticket.reply", "TicketReply", api.TicketReply{OK: true, Ticket: "Vb3nP0qL7xR2sK9mZc4tYw8hD1fG6jA5eU0oIi3rNk2", ExpiresAt: ts.Add(30 * time.Second)})
	add("route.loginCode.reply", "LoginCodeReply", api.LoginCodeReply{OK: true, Code: "q1Zk8mW3bR0xTn5vYc7pLd2sGh4jKf6aE9uXo1iNw0A", ExpiresAt: ts.Add(5 * time.Minute)})
	add("route.terminal.opened", "TermFrame", api.TermFrame{Type: api.FrameOpened, TermID: "main", ClientID: "ws-2f9c0a71b3e4d5c6", Role: api.RoleOwner, Cols: 120, Rows: 40})
	add("route.terminal.notice", "TermFrame", api.TermFrame{Type: api.FrameError, Code: wire.CodeConflict, Message: "this client is read-only"})
	add("route.terminal.fatal", "TermFrame", api.TermFrame{Type: api.FrameError, Code: wire.CodeTimeout, Message: "fell 4 MiB behind", Fatal: true})
	add("route.terminal.exit", "TermFrame", api.TermFrame{Type: api.FrameExit, ExitCode: ptr(-1), Signal: "SIGKILL"})
	add("route.terminal.resize", "TermFrame", api.TermFrame{Type: api.FrameResize, Cols: 100, Rows: 30})
	graphSamples(add)
	add("route.engines.reply", "EnginesReply", api.EnginesReply{OK: true, CheckedAt: ts, Engines: []api.Engine{
		{Name: "script", Summary: "built in, deterministic, no API key: plays a scenario file", Ready: true,
			Checks:      []api.EngineCheck{{Name: "cli", Status: api.CheckOK, Detail: "built into the runner; no CLI and no credential needed"}},
			Credentials: []api.EngineCredential{}, Models: []api.EngineModel{{ID: "script-1"}}, Settings: []api.EngineSetting{}},
		{Name: "codex", Summary: "the Codex CLI's app-server over JSON-RPC", Reason: "no openai-api-key: store it with `supervisor creds set openai-api-key`",
			CLI: &api.EngineCLI{Program: "codex", Path: "/opt/corral/engines/node_modules/.bin/codex", Source: "pinned", Version: "0.169.0"},
			Checks: []api.EngineCheck{{Name: "cli", Status: api.CheckOK, Detail: "codex-cli 0.169.0"}, {Name: "credentials", Status: api.CheckFailed, Detail: "no openai-api-key"},
				{Name: "accepted", Status: api.CheckSkipped, Detail: "not asked for"}},
			Credentials: []api.EngineCredential{{Item: "openai-api-key"}},
			Models:      []api.EngineModel{{ID: "gpt-5.5", Doc: "bundled with Codex 0.169"}},
			Settings: []api.EngineSetting{{Key: "auth", Type: api.SettingString, Values: []string{"apiKey", "login"}, Default: "apiKey", Doc: "which credential"},
				{Key: "requestMaxRetries", Type: api.SettingInteger, Min: ptr(0.0), Default: "2", Doc: "retries of a failed model request"}},
			Defaults: map[string]any{"requestMaxRetries": 4}},
	}})
	creds := api.CredentialsReply{OK: true, Store: api.StoreKeyring, Location: "OS keyring, service dev.corral", Items: []api.CredentialItem{
		{Item: "anthropic-api-key", Set: true, Engines: []string{"claude", "copilot"}},
		{Item: "openai-api-key", Engines: []string{"codex", "copilot"}, Error: "keyring dev.corral/openai-api-key: cannot read it"},
		{Item: "github-token", Engines: []string{"copilot"}},
	}}
	add("route.credentials.reply", "CredentialsReply", creds)
	add("route.setCredential.request", "SetCredentialRequest", api.SetCredentialRequest{Secret: "sk-ant-api03-example"})
	add("route.setCredential.reply", "CredentialsReply", api.CredentialsReply{OK: true, Store: api.StoreFile, Location: "/etc/corral/credentials.json",
		Items: []api.CredentialItem{{Item: "github-token", Set: true, Engines: []string{"copilot"}}}})
	// A few runner messages, as the codec writes them.
	msg := func(name, reqID string, m wire.Message) {
		line, err := wire.AppendMessage(nil, reqID, m)
		if err != nil {
			panic(err)
		}
		add("wire."+name, "Message", json.RawMessage(bytes.TrimSuffix(line, []byte("\n"))))
	}
	msg("liveEnsure", "1", &wire.LiveEnsure{Spec: spec, Dir: "/state/sessions/3f2a9c0d1e4b"})
	msg("command", "2", &wire.Command{Command: mustJSON(json.RawMessage(`{"cmd":"send","text":"hi"}`))})
	msg("commandReply", "2", &wire.CommandReply{Outcome: wire.OutcomeRan, Reply: wire.OKReply(queued)})
	msg("state", "", &wire.StateReport{State: wire.StateWorking, Turn: 2, Queued: 1})
	msg("mirror", "", &wire.Mirror{Seq: 7, Event: mustJSON(events()[6])})
	msg("termData", "", &wire.TermData{TermID: "main", ClientID: "c1", Data: []byte("ls\r\n")})
	msg("termOpened", "3", &wire.TermOpened{TermID: "main", ClientID: "c2", Error: wire.Errorf(wire.CodeUnavailable, "no terminal support")})
	return out
}
