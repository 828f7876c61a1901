package claude

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
)

func TestKindOf(t *testing.T) {
	for tool, want := range map[string]engine.Kind{
		"Bash": engine.KindShell, "Write": engine.KindEdit, "Edit": engine.KindEdit, "MultiEdit": engine.KindEdit, "NotebookEdit": engine.KindEdit,
		"Read": engine.KindRead, "Glob": engine.KindRead, "Grep": engine.KindRead, "LS": engine.KindRead,
		"WebFetch": engine.KindFetch, "WebSearch": engine.KindFetch,
		"mcp__github__create_issue": engine.KindMCP, "mcp__x": engine.KindOther, "mcp____t": engine.KindOther,
		"Task": engine.KindOther, "AskUserQuestion": engine.KindOther, "": engine.KindOther,
	} {
		if got := kindOf(tool); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", tool, got, want)
		}
	}
}

func TestDescribeTool(t *testing.T) {
	for _, tc := range []struct {
		tool, input string
		want        engine.ToolCall
		summary     string
	}{
		{"Bash", `{"command":"go test ./...\nmore","description":"Run tests"}`, engine.ToolCall{Command: "go test ./...\nmore"}, "go test ./... …"},
		{"Edit", `{"file_path":"rel/f.go","old_string":"a"}`, engine.ToolCall{Path: "/w/rel/f.go"}, "/w/rel/f.go"},
		{"NotebookEdit", `{"notebook_path":"/n.ipynb"}`, engine.ToolCall{Path: "/n.ipynb"}, "/n.ipynb"},
		{"Read", `{"file_path":"/etc/hosts"}`, engine.ToolCall{Path: "/etc/hosts"}, "/etc/hosts"},
		{"Grep", `{"pattern":"TODO","path":"src"}`, engine.ToolCall{Path: "/w/src"}, "TODO src"},
		{"Glob", `{"pattern":"**/*.go"}`, engine.ToolCall{Path: "/w"}, "**/*.go"},
		{"WebFetch", `{"url":"https://example.com","prompt":"x"}`, engine.ToolCall{URL: "https://example.com"}, "https://example.com"},
		{"WebSearch", `{"query":"go generics"}`, engine.ToolCall{}, "go generics"},
		{"mcp__db__query", `{"sql":"select 1"}`, engine.ToolCall{Server: "db", MCPTool: "query"}, "db/query"},
		{"Task", `{"description":"Explore the code"}`, engine.ToolCall{}, "Explore the code"},
		{"Weird", `not json`, engine.ToolCall{}, "Weird"},
	} {
		in := json.RawMessage(tc.input)
		got := describeTool("/w", "id", tc.tool, in)
		if got.Command != tc.want.Command || got.Path != tc.want.Path || got.URL != tc.want.URL || got.Server != tc.want.Server || got.MCPTool != tc.want.MCPTool || got.Kind != kindOf(tc.tool) {
			t.Errorf("describeTool(%s) = %+v", tc.tool, got)
		}
		if s := summarize(got, in); s != tc.summary {
			t.Errorf("summarize(%s) = %q, want %q", tc.tool, s, tc.summary)
		}
	}
}

func TestTrimOutput(t *testing.T) {
	short := "hello"
	if trimOutput(short) != short {
		t.Error("a short output was changed")
	}
	long := strings.Repeat("é", maxOutput) // 2 bytes each
	got := trimOutput(long)
	if len(got) > maxOutput+100 || !strings.Contains(got, "bytes trimmed") || !strings.HasPrefix(got, "é") || !strings.HasSuffix(got, "é") {
		t.Errorf("trimOutput kept %d bytes: %.40q…", len(got), got)
	}
	if !json.Valid([]byte(`"` + strings.ReplaceAll(got, "\n", `\n`) + `"`)) {
		t.Error("trimmed output is not valid UTF-8")
	}
}

func TestBashExitCode(t *testing.T) {
	if c := bashExitCode("ok", false); c == nil || *c != 0 {
		t.Errorf("success = %v", c)
	}
	if c := bashExitCode("Exit code 127\nsh: nope: not found", true); c == nil || *c != 127 {
		t.Errorf("failure = %v", c)
	}
	if c := bashExitCode("<tool_use_error>Blocked</tool_use_error>", true); c != nil {
		t.Errorf("a refusal has exit code %d", *c)
	}
}
