package claude

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseFrame feeds arbitrary stdout lines to the frame parser and every
// typed view the adapter reads: bad input is an error, never a panic.
// Seeds: testdata/fuzz/FuzzParseFrame.
func FuzzParseFrame(f *testing.F) {
	f.Add([]byte(`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"t"}}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":5}},"parent_tool_use_id":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := parseFrame(line)
		if err != nil {
			if fr != nil {
				t.Fatal("a frame and an error")
			}
			return
		}
		if fr.Type == "" {
			t.Fatal("a frame without a type")
		}
		_ = fr.kind()
		_ = decodeView(fr)
		if _, bs, err := fr.assistant(); err == nil {
			for _, b := range bs {
				_ = textOf(b.Content)
			}
		}
		if _, bs, err := fr.user(); err == nil {
			for _, b := range bs {
				_ = textOf(b.Content)
			}
		}
		if r, err := fr.controlRequest(); err == nil {
			call := describeTool("/w", r.ToolUseID, r.ToolName, r.Input)
			_ = summarize(call, r.Input)
		}
	})
}

// FuzzEditTool applies arbitrary edits to arbitrary text: the result is an
// error or text that is still valid UTF-8, never a panic.
func FuzzEditTool(f *testing.F) {
	f.Add("a \u201cb\u201d c\r\n", `"b"`, "x", false)
	f.Add(`{"k": "caf\u00e9"}`, "café", "thé", false)
	f.Add("x x x\n", "x", "", true)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		if !utf8.ValidString(content) || !utf8.ValidString(old) || !utf8.ValidString(new) {
			return
		}
		out, err := applyEditTool("/w/f.txt", []byte(content), true, []editOp{{OldString: old, NewString: new, ReplaceAll: all}})
		if err != nil {
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("edit produced invalid UTF-8: %q", out)
		}
		if bytes.Equal(out, []byte(content)) {
			t.Fatalf("a successful edit changed nothing: %q", content)
		}
	})
}

// FuzzStringifyNotebookJSON checks the JSON.stringify reproduction: what it
// writes is JSON that reads back to the same value.
func FuzzStringifyNotebookJSON(f *testing.F) {
	f.Add([]byte(notebookFixture))
	f.Add([]byte(`{"1":[1e21,0.1,-0,"\u2028\u0007"],"a":{"b":null,"a":true},"a":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseOrdered(data)
		if err != nil {
			return
		}
		var b strings.Builder
		v.stringify(&b, "")
		out := b.String()
		if !json.Valid([]byte(out)) {
			t.Fatalf("stringify wrote invalid JSON %q for %q", out, data)
		}
		back, err := parseOrdered([]byte(out))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		var b2 strings.Builder
		back.stringify(&b2, "")
		if b2.String() != out {
			t.Fatalf("not stable:\n%s\n%s", out, b2.String())
		}
	})
}
