package claude

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// TestEditVerdicts plays the three outcomes of hunk review: every hunk
// accepted (Claude's Edit writes the file), some accepted (the runner wrote
// them and the call is refused with what was applied), none accepted (refused
// with the reviewer's notes).
func TestEditVerdicts(t *testing.T) {
	t.Parallel()
	const original = "one\ntwo\nthree\n"
	const partial = "one\nTWO\nthree\n" // what the runner writes for "some accepted"
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("read", "",
			call("toolu_read_all", "Read", map[string]string{"file_path": "${cwd}/all.txt"}),
			call("toolu_read_some", "Read", map[string]string{"file_path": "${cwd}/some.txt"}),
			call("toolu_read_none", "Read", map[string]string{"file_path": "${cwd}/none.txt"})),
		toolStep("edit", "",
			call("toolu_all", "Edit", map[string]string{"file_path": "${cwd}/all.txt", "old_string": "two\nthree", "new_string": "TWO\nTHREE"}),
			call("toolu_some", "Edit", map[string]string{"file_path": "${cwd}/some.txt", "old_string": "two\nthree", "new_string": "TWO\nTHREE"}),
			call("toolu_none", "Edit", map[string]string{"file_path": "${cwd}/none.txt", "old_string": "two\nthree", "new_string": "TWO\nTHREE"})),
		textStep("final", "Done."),
	}}
	const appliedMsg = "The reviewer accepted 1 of 2 hunks; Corral wrote it: line 2 is now TWO. Rejected: line 3 (keep lowercase)."
	const noneMsg = "The reviewer rejected every hunk: do not touch none.txt."
	var mu sync.Mutex
	proposals := map[string]*engine.EditProposal{}
	decide := func(_ context.Context, c engine.ToolCall) engine.Verdict {
		if c.Kind != engine.KindEdit {
			return engine.Verdict{Allow: true}
		}
		mu.Lock()
		proposals[filepath.Base(c.Path)] = c.Edit
		mu.Unlock()
		switch filepath.Base(c.Path) {
		case "all.txt":
			return engine.Verdict{Allow: true}
		case "some.txt":
			if err := os.WriteFile(c.Path, []byte(partial), 0o644); err != nil {
				t.Error(err)
			}
			return engine.Verdict{Applied: true, Message: appliedMsg}
		default:
			return engine.Verdict{Message: noneMsg}
		}
	}
	s := newSession(t, sc, sessionOpts{decide: decide, prepare: func(wt, _ string) {
		for _, name := range []string{"all.txt", "some.txt", "none.txt"} {
			if err := os.WriteFile(filepath.Join(wt, name), []byte(original), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}})
	s.MustTurn("Edit the three files.")

	want := map[string]string{"all.txt": "one\nTWO\nTHREE\n", "some.txt": partial, "none.txt": original}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(s.Cwd, name))
		if err != nil || string(got) != content {
			t.Errorf("%s = %q, %v; want %q", name, got, err, content)
		}
		p := proposals[name]
		if p == nil || string(p.Before) != original || string(p.After) != "one\nTWO\nTHREE\n" || !p.Existed {
			t.Errorf("%s proposal = %+v", name, p)
		}
	}
	reqs := s.modelRequests()
	last := reqs[len(reqs)-1]
	for id, msg := range map[string]string{"toolu_some": appliedMsg, "toolu_none": noneMsg} {
		text, isErr, ok := toolResultFor(last, id)
		if !ok || !isErr || !strings.Contains(text, msg) {
			t.Errorf("tool_result for %s = %q (error %v, found %v); want the verdict's message", id, text, isErr, ok)
		}
	}
	outcomes := map[string]string{}
	for _, f := range s.toolFinished() {
		outcomes[f.ToolID] = f.Outcome
	}
	if outcomes["toolu_all"] != "ok" || outcomes["toolu_some"] != "denied" || outcomes["toolu_none"] != "denied" {
		t.Errorf("outcomes = %v", outcomes)
	}
}

// TestEditProposalsMatchWhatClaudeWrites lets Claude's own tools apply edits
// that exercise its matching rules, and checks the bytes it wrote against
// the proposal the gate was shown.
func TestEditProposalsMatchWhatClaudeWrites(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"crlf.txt":   "line one\r\nline \"two\"\r\nline three\r\n",
		"curly.txt":  "it\u2019s \u201cquoted\u201d here\nkeep\n",
		"del.txt":    "a\nb\nc\n",
		"all.txt":    "x = 1; x = 2; y = x\n",
		"esc.json":   "{\"name\": \"caf\\u00e9\"}\n",
		"write.txt":  "p\r\nq\r\n",
		"bom.txt":    "\uFEFFfirst\nsecond\n",
		"nb.ipynb":   notebookFixture,
		"mixed.txt":  "a\r\nb\nc\r\nd\r\n",
		"tabs.txt":   "\tindent\n\tindent\n",
		"dollar.txt": "price: 5\n",
		"bomw.txt":   "\uFEFFold\n",
	}
	edits := []struct {
		name, tool string
		input      map[string]any
	}{
		{"crlf.txt", "Edit", map[string]any{"old_string": "line \"two\"\nline three", "new_string": "LINE 2\nLINE 3\nextra"}},
		{"curly.txt", "Edit", map[string]any{"old_string": "it's \"quoted\" here", "new_string": "it's \"new\" (one)"}},
		{"del.txt", "Edit", map[string]any{"old_string": "b", "new_string": ""}},
		{"all.txt", "Edit", map[string]any{"old_string": "x", "new_string": "count", "replace_all": true}},
		{"esc.json", "Edit", map[string]any{"old_string": "\"café\"", "new_string": "\"thé\""}},
		{"write.txt", "Write", map[string]any{"content": "new\ncontent\n"}},
		{"new.txt", "Edit", map[string]any{"old_string": "", "new_string": "fresh\n"}},
		{"bom.txt", "Edit", map[string]any{"old_string": "second", "new_string": "2nd"}},
		{"nb.ipynb", "NotebookEdit", map[string]any{"cell_id": "c2", "new_source": "print(2)\nprint(3)", "edit_mode": "replace"}},
		{"mixed.txt", "Edit", map[string]any{"old_string": "b\nc", "new_string": "B\nC"}},
		{"tabs.txt", "Edit", map[string]any{"old_string": "\tindent\n\tindent", "new_string": "\tdone"}},
		{"bomw.txt", "Write", map[string]any{"content": "replaced\n"}},
		{"dollar.txt", "Edit", map[string]any{"old_string": "5", "new_string": "$& $1 $$"}},
	}
	var reads, writes []fakemodel.ToolCall
	for name := range files {
		reads = append(reads, call("toolu_read_"+strings.ReplaceAll(name, ".", "_"), "Read", map[string]string{"file_path": "${cwd}/" + name}))
	}
	for i, e := range edits {
		in := map[string]any{"file_path": "${cwd}/" + e.name}
		if e.tool == "NotebookEdit" {
			in = map[string]any{"notebook_path": "${cwd}/" + e.name}
		}
		for k, v := range e.input {
			in[k] = v
		}
		writes = append(writes, call("toolu_edit_"+string(rune('a'+i)), e.tool, in))
	}
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("read", "", reads...),
		toolStep("edit", "", writes...),
		textStep("final", "Done."),
	}}
	var mu sync.Mutex
	proposals := map[string]*engine.EditProposal{}
	decide := func(_ context.Context, c engine.ToolCall) engine.Verdict {
		if c.Kind == engine.KindEdit {
			mu.Lock()
			proposals[filepath.Base(c.Path)] = c.Edit
			mu.Unlock()
		}
		return engine.Verdict{Allow: true}
	}
	s := newSession(t, sc, sessionOpts{decide: decide, prepare: func(wt, _ string) {
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(wt, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}})
	s.MustTurn("Make the edits.")

	for _, e := range edits {
		p := proposals[e.name]
		if p == nil {
			t.Errorf("%s: no proposal reached the gate", e.name)
			continue
		}
		got, err := os.ReadFile(filepath.Join(s.Cwd, e.name))
		if err != nil {
			t.Errorf("%s: %v", e.name, err)
			continue
		}
		if !bytes.Equal(got, p.After) {
			t.Errorf("%s (%s): Claude wrote %q, the proposal was %q", e.name, e.tool, got, p.After)
		}
		if string(p.Before) != files[e.name] {
			t.Errorf("%s: proposal Before = %q, want the file as it was", e.name, p.Before)
		}
	}
	for _, f := range s.toolFinished() {
		if f.Outcome != "ok" || f.Message != "" {
			t.Errorf("tool %s (%s): outcome %s, message %q: %s", f.ToolID, f.Tool, f.Outcome, f.Message, f.Output)
		}
	}
}

// notebookFixture is a small nbformat 4.5 notebook.
const notebookFixture = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "c1",
   "metadata": {},
   "source": [
    "# Title"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "c2",
   "metadata": {"tags": []},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1\n"]}],
   "source": ["print(1)"]
  }
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "language_info": {"name": "python", "version": "3.11.0"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
`
