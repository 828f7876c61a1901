package claude

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/engine"
)

// toolInput holds the input fields of Claude's tools that the gate looks at.
type toolInput struct {
	Command      string `json:"command"`
	Description  string `json:"description"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	URL          string `json:"url"`
	Query        string `json:"query"`
}

// kindOf classifies a Claude tool for the gate.
func kindOf(tool string) engine.Kind {
	switch tool {
	case "Bash":
		return engine.KindShell
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return engine.KindEdit
	case "Read", "Glob", "Grep", "LS":
		return engine.KindRead
	case "WebFetch", "WebSearch":
		return engine.KindFetch
	}
	if _, _, ok := mcpName(tool); ok {
		return engine.KindMCP
	}
	return engine.KindOther
}

// mcpName splits an MCP tool name, mcp__<server>__<tool>.
func mcpName(tool string) (server, name string, ok bool) {
	rest, found := strings.CutPrefix(tool, "mcp__")
	if !found {
		return "", "", false
	}
	server, name, ok = strings.Cut(rest, "__")
	if !ok || server == "" || name == "" {
		return "", "", false
	}
	return server, name, true
}

// describeTool is a tool call as the gate and the events see it, without
// the edit proposal, which needs the file.
func describeTool(cwd, id, tool string, input json.RawMessage) engine.ToolCall {
	var in toolInput
	_ = json.Unmarshal(input, &in) // a tool without these fields is still a call
	call := engine.ToolCall{ID: id, Tool: tool, Kind: kindOf(tool), Input: input}
	switch call.Kind {
	case engine.KindShell:
		call.Command = in.Command
	case engine.KindEdit:
		call.Path = absPath(cwd, firstNonEmpty(in.FilePath, in.NotebookPath))
	case engine.KindRead:
		call.Path = absPath(cwd, firstNonEmpty(in.FilePath, in.Path, cwd))
	case engine.KindFetch:
		call.URL = in.URL
	case engine.KindMCP:
		call.Server, call.MCPTool, _ = mcpName(tool)
	}
	return call
}

// summarize is the one-line description of a call for toolStarted.
func summarize(call engine.ToolCall, input json.RawMessage) string {
	var in toolInput
	_ = json.Unmarshal(input, &in)
	var s string
	switch {
	case call.Command != "":
		s = call.Command
	case call.Tool == "Glob" || call.Tool == "Grep":
		s = strings.TrimSpace(in.Pattern + " " + in.Path)
	case call.Path != "":
		s = call.Path
	case call.URL != "":
		s = call.URL
	case in.Query != "":
		s = in.Query
	case call.Kind == engine.KindMCP:
		s = call.Server + "/" + call.MCPTool
	case in.Description != "":
		s = in.Description
	default:
		s = call.Tool
	}
	return clip(oneLine(s), 200)
}

func absPath(cwd, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// exitCodePattern finds the exit status Claude's Bash tool reports for a
// failed command ("Exit code 1\n...").
var exitCodePattern = regexp.MustCompile(`^Exit code (\d+)`)

// bashExitCode is the exit status of a finished Bash call, if known.
func bashExitCode(output string, isError bool) *int {
	if !isError {
		zero := 0
		return &zero
	}
	m := exitCodePattern.FindStringSubmatch(output)
	if m == nil {
		return nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return nil
	}
	return &n
}

// maxOutput bounds the output a toolFinished event carries.
const maxOutput = 4096

// trimOutput keeps the start and the end of a long output, where commands
// say what they do and how they ended.
func trimOutput(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	half := maxOutput / 2
	head := s[:half]
	for len(head) > 0 && !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	tail := s[len(s)-half:]
	for len(tail) > 0 && !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return head + "\n… (" + strconv.Itoa(len(s)-len(head)-len(tail)) + " bytes trimmed) …\n" + tail
}

func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "…"
}
