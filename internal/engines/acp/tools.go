package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// maxOutput bounds a tool's output in a toolFinished event.
const maxOutput = 16 << 10

// toolCall is what Corral knows of one of the agent's tool calls, merged
// from its tool_call and tool_call_update notifications and the tool call
// a permission request carries.
type toolCall struct {
	id        string
	name      string // the agent's own tool name, when its metadata says
	title     string
	kind      string // the ACP tool kind
	status    string
	rawInput  json.RawMessage
	locations []toolCallLocation
	content   []toolCallContent
	rawOutput json.RawMessage

	started, finished bool
	startedAt         time.Time
	denied            bool
	message           string
	exitCode          *int
}

// tool returns the turn's record of id, new if need be.
func (t *turnState) tool(id string) *toolCall {
	tc := t.tools[id]
	if tc == nil {
		tc = &toolCall{id: id, startedAt: time.Now()}
		t.tools[id] = tc
		t.order = append(t.order, id)
	}
	return tc
}

// merge takes the fields an update sets.
func (tc *toolCall) merge(f toolFields, content json.RawMessage) {
	if f.Title != nil {
		tc.title = *f.Title
	}
	if f.Kind != nil {
		tc.kind = *f.Kind
	}
	if f.Status != nil {
		tc.status = *f.Status
	}
	if len(f.RawInput) > 0 && !isEmptyJSON(f.RawInput) {
		tc.rawInput = f.RawInput
	}
	if len(f.RawOutput) > 0 {
		tc.rawOutput = f.RawOutput
	}
	if f.Locations != nil {
		tc.locations = f.Locations
	}
	var items []toolCallContent
	if len(content) > 0 && json.Unmarshal(content, &items) == nil && len(items) > 0 {
		tc.content = items
	}
	if name := metaToolName(f.Meta); name != "" {
		tc.name = name
	}
}

// ready says the call is described well enough to announce: its input has
// arrived, or it is already running or over. (Agents streaming the model's
// answer announce a call before its input is known.)
func (tc *toolCall) ready() bool {
	return tc.rawInput != nil || (tc.status != "" && tc.status != "pending")
}

// metaToolName reads the agent's own tool name from the metadata Claude
// Code's ACP agent attaches ({"claudeCode": {"toolName": ...}}).
func metaToolName(meta json.RawMessage) string {
	var m struct {
		ClaudeCode struct {
			ToolName string `json:"toolName"`
		} `json:"claudeCode"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return m.ClaudeCode.ToolName
}

func isEmptyJSON(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "{}" || s == "null" || s == ""
}

// input reads the usual fields of a tool's raw input.
type input struct {
	Command  string `json:"command"`
	FilePath string `json:"file_path"`
	Path     string `json:"path"`
	URL      string `json:"url"`
}

func (tc *toolCall) input() input {
	var in input
	_ = json.Unmarshal(tc.rawInput, &in)
	return in
}

// path is the file the call is about, absolute (relative to cwd).
func (tc *toolCall) path(cwd string) string {
	in := tc.input()
	p := in.FilePath
	if p == "" {
		p = in.Path
	}
	if p == "" && len(tc.locations) > 0 {
		p = tc.locations[0].Path
	}
	if p != "" && !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return p
}

// toolName is the name Corral shows and the gate sees: the agent's own
// name when known, else the ACP kind.
func (tc *toolCall) toolName() string {
	switch {
	case tc.name != "":
		return tc.name
	case tc.kind != "":
		return tc.kind
	}
	return "tool"
}

// call describes the tool call for the gate.
func (tc *toolCall) call(cwd string) engine.ToolCall {
	c := engine.ToolCall{ID: tc.id, Tool: tc.toolName(), Kind: engine.KindOther, Input: tc.rawInput}
	server, tool, isMCP := mcpName(tc.name)
	switch {
	case isMCP:
		c.Kind, c.Server, c.MCPTool = engine.KindMCP, server, tool
	case tc.kind == "execute":
		if cmd := tc.input().Command; cmd != "" {
			c.Kind, c.Command = engine.KindShell, cmd
		}
	case tc.kind == "read" || tc.kind == "search":
		c.Kind, c.Path = engine.KindRead, tc.path(cwd)
		if c.Path == "" {
			c.Path = cwd
		}
	case tc.kind == "edit" || tc.kind == "delete" || tc.kind == "move":
		c.Kind, c.Path = engine.KindEdit, tc.path(cwd)
	case tc.kind == "fetch":
		c.Kind, c.URL = engine.KindFetch, tc.input().URL
	}
	return c
}

// mcpName splits an MCP tool name "mcp__server__tool". The tools of the
// "acp" server are the agent's own, routed through Corral's fs and
// terminal methods, not MCP calls.
func mcpName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	if !found || server == "acp" || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// wireKind is the kind of a toolStarted event.
func wireKind(c engine.ToolCall) string {
	return string(c.Kind)
}

// startToolLocked emits toolStarted once per call, after the text that
// came before it.
func (e *Engine) startToolLocked(t *turnState, tc *toolCall) {
	if tc.started {
		return
	}
	tc.started = true
	e.flushTextLocked(t)
	c := tc.call(e.opts.Cwd)
	summary := tc.title
	if summary == "" {
		summary = c.Tool
	}
	e.host.Emit(event.ToolStarted, event.ToolStartedData{
		ToolID: tc.id, Tool: c.Tool, Kind: wireKind(c), Summary: clip(oneLine(summary), 200),
		Command: c.Command, Path: c.Path, URL: c.URL,
	})
}

// finishToolLocked emits toolFinished once per call.
func (e *Engine) finishToolLocked(t *turnState, tc *toolCall, outcome, output string) {
	if tc.finished {
		return
	}
	e.startToolLocked(t, tc)
	tc.finished = true
	d := event.ToolFinishedData{ToolID: tc.id, Tool: tc.toolName(), Outcome: outcome,
		DurationMS: time.Since(tc.startedAt).Milliseconds(), Output: clip(output, maxOutput), ExitCode: tc.exitCode}
	if tc.denied {
		d.Outcome, d.Message = "denied", tc.message
	}
	e.host.Emit(event.ToolFinished, d)
}

// output is the text of a call's result: its text content, else its raw
// output.
func (tc *toolCall) output() string {
	var parts []string
	for _, c := range tc.content {
		if c.Type == "content" {
			if s := chunkText(c.Content); s != "" {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	if len(tc.rawOutput) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(tc.rawOutput, &s) == nil {
		return s
	}
	var blocks []textContent
	if json.Unmarshal(tc.rawOutput, &blocks) == nil {
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(tc.rawOutput)
}

// find returns the turn's unfinished call of one of kinds whose key (its
// command, or its path) is key: the call a terminal or file request
// carries out. The newest matching call wins.
func (t *turnState) find(cwd, key string, kinds ...string) *toolCall {
	for i := len(t.order) - 1; i >= 0; i-- {
		tc := t.tools[t.order[i]]
		if tc.finished || !contains(kinds, tc.kind) {
			continue
		}
		if tc.input().Command == key || tc.path(cwd) == key {
			return tc
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
