package copilot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
)

func TestPermissionRequestsBecomeToolCalls(t *testing.T) {
	const cwd = "/src/project"
	tests := []struct {
		name string
		req  string
		tool string
		want []engine.ToolCall
	}{
		{
			name: "shell carries the full command text",
			req:  `{"kind":"shell","toolCallId":"c1","fullCommandText":"sleep 30 && echo done > slept.txt","commands":[{"identifier":"sleep","readOnly":false}]}`,
			tool: "bash",
			want: []engine.ToolCall{{ID: "c1", Tool: "bash", Kind: engine.KindShell, Command: "sleep 30 && echo done > slept.txt"}},
		},
		{
			name: "created file",
			req:  `{"kind":"write","toolCallId":"c2","fileName":"/src/project/a.txt","newFileContents":"A\n","fileEdits":[{"after":{"path":"/src/project/a.txt","content":"A\n"}}]}`,
			tool: "create",
			want: []engine.ToolCall{{ID: "c2", Tool: "create", Kind: engine.KindEdit, Path: "/src/project/a.txt",
				Edit: &engine.EditProposal{Path: "/src/project/a.txt", After: []byte("A\n")}}},
		},
		{
			name: "changed file keeps both texts byte for byte",
			req:  `{"kind":"write","toolCallId":"c3","fileName":"b.txt","fileEdits":[{"before":{"path":"b.txt","content":"x\r\ny"},"after":{"path":"b.txt","content":"x\r\nY"}}]}`,
			tool: "edit",
			want: []engine.ToolCall{{ID: "c3", Tool: "edit", Kind: engine.KindEdit, Path: "/src/project/b.txt",
				Edit: &engine.EditProposal{Path: "/src/project/b.txt", Before: []byte("x\r\ny"), Existed: true, After: []byte("x\r\nY")}}},
		},
		{
			name: "deleted file",
			req:  `{"kind":"write","toolCallId":"c4","fileName":"/src/project/c.txt","fileEdits":[{"before":{"path":"/src/project/c.txt","content":"gone"}}]}`,
			tool: "apply_patch",
			want: []engine.ToolCall{{ID: "c4", Tool: "apply_patch", Kind: engine.KindEdit, Path: "/src/project/c.txt",
				Edit: &engine.EditProposal{Path: "/src/project/c.txt", Before: []byte("gone"), Existed: true, Delete: true}}},
		},
		{
			name: "moved file is a deletion and a creation",
			req:  `{"kind":"write","toolCallId":"c5","fileName":"/src/project/old.txt","fileEdits":[{"before":{"path":"/src/project/old.txt","content":"v1"},"after":{"path":"/src/project/new.txt","content":"v2"}}]}`,
			tool: "apply_patch",
			want: []engine.ToolCall{
				{ID: "c5", Tool: "apply_patch", Kind: engine.KindEdit, Path: "/src/project/old.txt",
					Edit: &engine.EditProposal{Path: "/src/project/old.txt", Before: []byte("v1"), Existed: true, Delete: true}},
				{ID: "c5", Tool: "apply_patch", Kind: engine.KindEdit, Path: "/src/project/new.txt",
					Edit: &engine.EditProposal{Path: "/src/project/new.txt", After: []byte("v2")}},
			},
		},
		{
			name: "read",
			req:  `{"kind":"read","toolCallId":"c6","path":"../elsewhere/secret.txt","intention":"Read file"}`,
			tool: "view",
			want: []engine.ToolCall{{ID: "c6", Tool: "view", Kind: engine.KindRead, Path: "/src/elsewhere/secret.txt"}},
		},
		{
			name: "url",
			req:  `{"kind":"url","toolCallId":"c7","url":"https://example.com/doc","intention":"Fetch"}`,
			tool: "web_fetch",
			want: []engine.ToolCall{{ID: "c7", Tool: "web_fetch", Kind: engine.KindFetch, URL: "https://example.com/doc"}},
		},
		{
			name: "mcp",
			req:  `{"kind":"mcp","toolCallId":"c8","serverName":"github","toolName":"create_issue","toolTitle":"Create issue","readOnly":false}`,
			tool: "github-create_issue",
			want: []engine.ToolCall{{ID: "c8", Tool: "github-create_issue", Kind: engine.KindMCP, Server: "github", MCPTool: "create_issue"}},
		},
		{
			name: "unknown kind asks as other, named by its kind",
			req:  `{"kind":"memory","toolCallId":"c9","fact":"likes tabs"}`,
			want: []engine.ToolCall{{ID: "c9", Tool: "memory", Kind: engine.KindOther}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req permissionRequest
			if err := json.Unmarshal([]byte(tt.req), &req); err != nil {
				t.Fatal(err)
			}
			got, err := toolCalls(req, json.RawMessage(tt.req), tt.tool, cwd)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if string(got[i].Input) != tt.req {
					t.Fatalf("call %d input = %s, want the request", i, got[i].Input)
				}
				got[i].Input = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("calls =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestWriteWithoutPreviewUsesTheFileOnDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := "new text\n"
	got, err := editProposals(permissionRequest{Kind: "write", FileName: path, NewFileContents: &text}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.EditProposal{{Path: path, Before: []byte("on disk\n"), Existed: true, After: []byte(text)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("proposals = %+v", got)
	}
	missing := filepath.Join(dir, "new.txt")
	got, err = editProposals(permissionRequest{Kind: "write", FileName: missing, NewFileContents: &text}, dir)
	if err != nil || len(got) != 1 || got[0].Existed || got[0].Path != missing {
		t.Fatalf("proposals for a new file = %+v, %v", got, err)
	}
}

func TestWriteWithoutAnyTextIsRefusedWithFeedback(t *testing.T) {
	tests := []struct {
		name string
		req  permissionRequest
		want string
	}{
		{"no preview and no contents", permissionRequest{Kind: "write", FileName: "/src/project/image.png"}, "no complete text of the file"},
		{"an empty side pair", permissionRequest{Kind: "write", FileEdits: []fileEditEntry{{}}}, "neither a before nor an after text"},
		{"a file without a path", permissionRequest{Kind: "write", FileEdits: []fileEditEntry{{After: &fileContent{Content: "x"}}}}, "has no path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toolCalls(tt.req, nil, "edit", "/src/project")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "Corral cannot review this edit") {
				t.Fatalf("err = %v, want feedback about %q", err, tt.want)
			}
		})
	}
}

// FuzzPermissionRequest feeds arbitrary permission requests to the mapping:
// it must never panic, and every call it produces must be one the runner
// can decide (an edit always carries its proposal, with an absolute path).
func FuzzPermissionRequest(f *testing.F) {
	f.Add([]byte(`{"kind":"write","toolCallId":"c","fileName":"a.txt","fileEdits":[{"before":{"path":"a.txt","content":"x"},"after":{"path":"b.txt","content":"y"}}]}`))
	f.Add([]byte(`{"kind":"shell","fullCommandText":"rm -rf /"}`))
	f.Add([]byte(`{"kind":"write","fileName":"n.txt","newFileContents":"z"}`))
	f.Add([]byte(`{"kind":"mcp","serverName":"s","toolName":"t"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var req permissionRequest
		if json.Unmarshal(raw, &req) != nil {
			return
		}
		// Relative paths resolve against a folder that does not exist, so
		// the fallback never reads a real file.
		calls, err := toolCalls(req, raw, "tool", "/nonexistent/corral-fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Corral cannot review this edit") {
				t.Fatalf("refusal %q is not feedback for the model", err)
			}
			return
		}
		if len(calls) == 0 {
			t.Fatal("no call and no refusal")
		}
		for _, c := range calls {
			if c.Kind == engine.KindEdit && (c.Edit == nil || !filepath.IsAbs(c.Edit.Path) || c.Path != c.Edit.Path) {
				t.Fatalf("edit call %+v without an absolute proposal", c)
			}
		}
	})
}
