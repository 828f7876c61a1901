package copilot

import (
	"encoding/json"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// maxToolOutput bounds the tool output a toolFinished event carries.
const maxToolOutput = 16 << 10

// toolStarted describes a tool call the CLI began; paths are made
// absolute against cwd.
func toolStarted(d toolStartData, cwd string) event.ToolStartedData {
	var args toolArguments
	_ = json.Unmarshal(d.Arguments, &args) // tools without these fields are fine
	kind := toolKind(d.ToolName, d.MCPServerName)
	out := event.ToolStartedData{ToolID: d.ToolCallID, Tool: d.ToolName, Kind: string(kind)}
	var detail string
	switch kind {
	case engine.KindShell:
		out.Command = args.Command
		detail = args.Command
	case engine.KindEdit, engine.KindRead:
		out.Path = absPath(args.Path, cwd)
		detail = args.Path
		if detail == "" {
			detail = args.Pattern
		}
	case engine.KindFetch:
		out.URL = args.URL
		detail = args.URL
	case engine.KindMCP:
		detail = d.MCPServerName + "/" + d.MCPToolName
	}
	title := d.ToolTitle
	if title == "" {
		title = args.Description
	}
	switch {
	case title != "" && detail != "":
		out.Summary = title + ": " + detail
	case title != "":
		out.Summary = title
	case detail != "":
		out.Summary = detail
	default:
		out.Summary = d.ToolName
	}
	return out
}

// toolFinished describes a tool call the CLI completed.
func toolFinished(d toolCompleteData, run *toolRun, denied map[string]string) event.ToolFinishedData {
	out := event.ToolFinishedData{ToolID: d.ToolCallID, Tool: run.name, Outcome: "ok", DurationMS: run.elapsed()}
	if d.Result != nil {
		out.Output = truncateOutput(d.Result.Content)
	}
	if d.ShellExecution != nil {
		out.ExitCode = d.ShellExecution.ExitCode
	}
	if !d.Success {
		out.Outcome = "error"
		if d.Error != nil {
			out.Message = d.Error.Message
			if d.Error.Code == "denied" {
				out.Outcome = "denied"
			}
		}
	}
	if feedback, ok := denied[d.ToolCallID]; ok {
		out.Outcome = "denied"
		out.Message = feedback
	}
	return out
}

// toolKind classifies the CLI's built-in tools.
func toolKind(name, mcpServer string) engine.Kind {
	if mcpServer != "" {
		return engine.KindMCP
	}
	switch name {
	case "bash", "read_bash", "write_bash", "stop_bash", "list_bash", "powershell":
		return engine.KindShell
	case "create", "edit", "apply_patch", "str_replace_editor", "write":
		return engine.KindEdit
	case "view", "grep", "glob":
		return engine.KindRead
	case "web_fetch", "web_search":
		return engine.KindFetch
	}
	return engine.KindOther
}

func truncateOutput(s string) string {
	if len(s) <= maxToolOutput {
		return s
	}
	cut := maxToolOutput
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (truncated)"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// sessionFailure maps a session.error onto a failure code.
func sessionFailure(d sessionErrorData) *engine.Failure {
	code := event.FailEngineError
	switch {
	case d.StatusCode == 401 || d.ErrorType == "authentication",
		strings.Contains(d.Message, "No GitHub OAuth token"): // no sign-in at all
		code = event.FailSignInExpired
	case d.ErrorType == "context_limit":
		code = event.FailContextFull
	}
	msg := strings.TrimSpace(d.Message)
	if msg == "" {
		msg = "the CLI reported an error of type " + d.ErrorType
	}
	return &engine.Failure{Code: code, Message: "copilot: " + msg}
}
