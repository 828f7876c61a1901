package claude

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditToolSemantics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  string
		existed bool
		ops     []editOp
		want    string
		wantErr string
	}{
		{name: "replaces the one occurrence", before: "a b c\n", existed: true, ops: []editOp{{OldString: "b", NewString: "B"}}, want: "a B c\n"},
		{name: "refuses an ambiguous string", before: "x x\n", existed: true, ops: []editOp{{OldString: "x", NewString: "y"}}, wantErr: "found 2 matches"},
		{name: "replace_all replaces every occurrence", before: "x x x\n", existed: true, ops: []editOp{{OldString: "x", NewString: "yy", ReplaceAll: true}}, want: "yy yy yy\n"},
		{name: "replacement text is literal", before: "v=1\n", existed: true, ops: []editOp{{OldString: "1", NewString: "$& $1 $$ $'"}}, want: "v=$& $1 $$ $'\n"},
		{name: "deleting a line takes its newline", before: "a\nb\nc\n", existed: true, ops: []editOp{{OldString: "b", NewString: ""}}, want: "a\nc\n"},
		{name: "deleting inside a line keeps the newline", before: "abc\n", existed: true, ops: []editOp{{OldString: "b", NewString: ""}}, want: "ac\n"},
		{name: "deleting a string ending in newline", before: "a\nb\nc\n", existed: true, ops: []editOp{{OldString: "b\n", NewString: ""}}, want: "a\nc\n"},
		{name: "missing string", before: "abc\n", existed: true, ops: []editOp{{OldString: "zzz", NewString: "y"}}, wantErr: "not found"},
		{name: "creates a file from an empty old_string", existed: false, ops: []editOp{{OldString: "", NewString: "new\n"}}, want: "new\n"},
		{name: "fills an empty file", before: " \n\t", existed: true, ops: []editOp{{OldString: "", NewString: "x"}}, want: "x"},
		{name: "refuses to create over content", before: "content", existed: true, ops: []editOp{{OldString: "", NewString: "x"}}, wantErr: "already exists"},
		{name: "refuses to edit a missing file", existed: false, ops: []editOp{{OldString: "a", NewString: "b"}}, wantErr: "does not exist"},
		{name: "same strings", before: "a", existed: true, ops: []editOp{{OldString: "a", NewString: "a"}}, wantErr: "no changes"},
		{name: "CRLF file is matched with LF and written with CRLF", before: "one\r\ntwo\r\nthree\r\n", existed: true, ops: []editOp{{OldString: "one\ntwo", NewString: "1\n2\n2b"}}, want: "1\r\n2\r\n2b\r\nthree\r\n"},
		{name: "mostly LF file keeps LF", before: "a\r\nb\nc\n", existed: true, ops: []editOp{{OldString: "b", NewString: "B"}}, want: "a\nB\nc\n"},
		{name: "curly quotes are matched and kept", before: "say \u201chi\u201d and it\u2019s\n", existed: true, ops: []editOp{{OldString: `say "hi" and it's`, NewString: `say "bye" and 'it's' ok`}}, want: "say \u201cbye\u201d and \u2018it\u2019s\u2019 ok\n"},
		{name: "old_string with an escape finds the character", before: "caf\u00e9\n", existed: true, ops: []editOp{{OldString: `caf\u00e9`, NewString: `th\u00e9`}}, want: "th\u00e9\n"},
		{name: "character finds the file's escape", before: `{"n": "caf\u00E9"}`, existed: true, ops: []editOp{{OldString: "caf\u00e9", NewString: "th\u00e9 \u00fc"}}, want: `{"n": "th\u00E9 \u00FC"}`},
		{name: "an escaped backslash is not an escape", before: `caf\\u00e9`, existed: true, ops: []editOp{{OldString: "caf\u00e9", NewString: "x"}}, wantErr: "not found"},
		{name: "byte order mark survives a fill", before: "\uFEFF", existed: true, ops: []editOp{{OldString: "", NewString: "text"}}, want: "\uFEFFtext"},
		{name: "multi edits apply in order", before: "a b c\n", existed: true, ops: []editOp{{OldString: "a", NewString: "A"}, {OldString: "c", NewString: "C"}}, want: "A b C\n"},
		{name: "multi edit may not rewrite an earlier new_string", before: "a b\n", existed: true, ops: []editOp{{OldString: "a", NewString: "xyz"}, {OldString: "y", NewString: "Y"}}, wantErr: "substring of a new_string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyEditTool("/w/f.txt", []byte(tc.before), tc.existed, tc.ops)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errCannotStage) {
					t.Fatalf("got %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestApplyEditRefusesWhatItCannotStage(t *testing.T) {
	for name, data := range map[string][]byte{
		"UTF-16":    {0xFF, 0xFE, 'a', 0},
		"not UTF-8": {'a', 0xC3, 0x28},
	} {
		if _, err := applyEditTool("/w/f", data, true, []editOp{{OldString: "a", NewString: "b"}}); !errors.Is(err, errCannotStage) {
			t.Errorf("%s: err = %v, want errCannotStage", name, err)
		}
	}
}

func TestProposeEdit(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "e.txt")
	if err := os.WriteFile(existing, []byte("\uFEFFold\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("Write keeps the byte order mark, not the line endings", func(t *testing.T) {
		p, err := proposeEdit("Write", existing, json.RawMessage(`{"file_path":"x","content":"a\nb\n"}`))
		if err != nil || !p.Existed || string(p.Before) != "\uFEFFold\r\n" || string(p.After) != "\uFEFFa\nb\n" {
			t.Fatalf("proposal = %+v, %v", p, err)
		}
	})
	t.Run("Write of a new file", func(t *testing.T) {
		p, err := proposeEdit("Write", filepath.Join(dir, "new.txt"), json.RawMessage(`{"content":"x"}`))
		if err != nil || p.Existed || p.Before != nil || string(p.After) != "x" {
			t.Fatalf("proposal = %+v, %v", p, err)
		}
	})
	t.Run("MultiEdit", func(t *testing.T) {
		p, err := proposeEdit("MultiEdit", existing, json.RawMessage(`{"edits":[{"old_string":"old","new_string":"new"}]}`))
		if err != nil || string(p.After) != "\uFEFFnew\r\n" {
			t.Fatalf("proposal = %+v, %v", p, err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		if _, err := proposeEdit("Write", dir, json.RawMessage(`{"content":"x"}`)); !errors.Is(err, errCannotStage) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := proposeEdit("Edit", existing, json.RawMessage(`{"old_string": 3}`)); !errors.Is(err, errCannotStage) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNotebookEdit(t *testing.T) {
	const nb = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 1,\n   \"id\": \"a\",\n   \"metadata\": {},\n   \"outputs\": [\"x\"],\n   \"source\": [\"1\"]\n  }\n ],\n \"metadata\": {\"2\": 1, \"1\": 2.50, \"b\": 1e21},\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"replace clears outputs", `{"cell_id":"a","new_source":"2"}`,
			"{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"a\",\n   \"metadata\": {},\n   \"outputs\": [],\n   \"source\": \"2\"\n  }\n ],\n \"metadata\": {\n  \"1\": 2.5,\n  \"2\": 1,\n  \"b\": 1e+21\n },\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n"},
		{"insert at the start without an id before nbformat 4.5", `{"new_source":"# T","cell_type":"markdown","edit_mode":"insert"}`,
			"{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"source\": \"# T\",\n   \"metadata\": {}\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 1,\n   \"id\": \"a\",\n   \"metadata\": {},\n   \"outputs\": [\n    \"x\"\n   ],\n   \"source\": [\n    \"1\"\n   ]\n  }\n ],\n \"metadata\": {\n  \"1\": 2.5,\n  \"2\": 1,\n  \"b\": 1e+21\n },\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n"},
		{"delete by index id", `{"cell_id":"cell-0","new_source":"","edit_mode":"delete"}`,
			"{\n \"cells\": [],\n \"metadata\": {\n  \"1\": 2.5,\n  \"2\": 1,\n  \"b\": 1e+21\n },\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyNotebookEdit([]byte(nb), true, json.RawMessage(tc.input))
			if err != nil || string(got) != tc.want {
				t.Fatalf("got\n%s\n%v\nwant\n%s", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"cell_id":"zz","new_source":"x"}`, `{"new_source":"x"}`, `{"cell_id":"cell-9","new_source":"x"}`} {
		if _, err := applyNotebookEdit([]byte(nb), true, json.RawMessage(bad)); !errors.Is(err, errCannotStage) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
	if _, err := applyNotebookEdit([]byte("{"), true, json.RawMessage(`{"cell_id":"a","new_source":"x"}`)); !errors.Is(err, errCannotStage) {
		t.Errorf("invalid notebook: err = %v", err)
	}
}

func TestJSNumber(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0", 1: "1", -1: "-1", 2.5: "2.5", 0.1: "0.1", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-6: "0.000001", 1e-7: "1e-7", 123456789012: "123456789012", 1.5e-10: "1.5e-10", -0.000123: "-0.000123",
	} {
		if got := jsNumber(in); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestJSTrim(t *testing.T) {
	if got := jsTrim("\uFEFF \u00a0\u2028x\t\n"); got != "x" {
		t.Errorf("jsTrim = %q", got)
	}
	if got := jsTrim("\u0085x"); got != "\u0085x" {
		t.Errorf("jsTrim trimmed NEL, which JavaScript keeps: %q", got)
	}
}
