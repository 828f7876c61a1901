package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

// hunkText is a hunk's lines as a diff shows them.
func hunkText(lines []hunks.Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(string(l.Op) + l.Text + l.EOL)
	}
	return b.String()
}

// backgroundWriter is a command that leaves a writer running past its own
// end: the writer appends to a.txt once the test writes to go.fifo, then
// says so on done.fifo (FIFOs are not files the capture follows).
const backgroundWriter = `(cat go.fifo >/dev/null; printf 'late\n' >> a.txt; echo > done.fifo) >/dev/null 2>&1 &`

// releaseWriter lets backgroundWriter's writer write and waits until it
// has.
func releaseWriter(t *testing.T, cwd string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cwd, "go.fifo"), []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(cwd, "done.fifo")); err != nil {
		t.Fatal(err)
	}
}

// fakeCall runs one tool call through host as an engine does: toolStarted,
// Permit, toolFinished. An allowed edit is written; a shell call runs
// nothing (the test writes).
func fakeCall(ctx context.Context, host engine.Host, call engine.ToolCall) engine.Verdict {
	host.Emit(event.ToolStarted, event.ToolStartedData{ToolID: call.ID, Tool: call.Tool, Kind: string(call.Kind), Summary: call.Command, Command: call.Command})
	v := host.Permit(ctx, call)
	outcome := "ok"
	switch {
	case !v.Allow:
		outcome = "denied"
	case call.Edit != nil:
		if err := os.WriteFile(call.Edit.Path, call.Edit.After, 0o644); err != nil {
			outcome = "error"
		}
	}
	host.Emit(event.ToolFinished, event.ToolFinishedData{ToolID: call.ID, Tool: call.Tool, Outcome: outcome})
	return v
}

func shellCall(id, command string) engine.ToolCall {
	return engine.ToolCall{ID: id, Tool: "Bash", Kind: engine.KindShell, Command: command}
}

// TestWritesOutsideToolCallsAreCaptured writes a file (as a process a
// command left running would) after a shell call has finished, and checks
// that the next look of the turn stages it once, by no tool call, and
// that it can be reverted (while the turn is open, or, found by the turn's
// end, once it has ended).
func TestWritesOutsideToolCallsAreCaptured(t *testing.T) {
	const hold = "corral-test-hold" // not allowed: the gate asks
	cases := []struct {
		name string
		// during says the write lands while the first call waits for a
		// person (and is then denied), instead of after it finished.
		during bool
		// next is what the turn does after the write; nil ends it.
		next []engine.ToolCall
	}{
		{name: "the next shell call's start finds it", next: []engine.ToolCall{shellCall("t2", "true")}},
		{name: "an ask finds it", next: []engine.ToolCall{shellCall("t2", hold)}},
		{name: "a review finds it", next: []engine.ToolCall{{ID: "t2", Tool: "Write", Kind: engine.KindEdit, Path: "held.txt",
			Edit: &engine.EditProposal{After: []byte("held\n")}}}},
		{name: "the turn's end finds it"},
		{name: "a denied call's end finds it", during: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			written := make(chan struct{})
			s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir()}
			path := filepath.Join(s.cwd, "a.txt")
			if err := os.WriteFile(path, []byte("early\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			eng := &fakeEngine{turn: func(ctx context.Context, _ engine.TurnInput, host engine.Host) (engine.TurnResult, error) {
				first := shellCall("t1", "true")
				if c.during {
					first.Command = hold
				}
				fakeCall(ctx, host, first)
				<-written
				for _, call := range c.next {
					if call.Edit != nil {
						call.Path = filepath.Join(s.cwd, call.Path)
						call.Edit.Path = call.Path
					}
					fakeCall(ctx, host, call)
				}
				// A last hold keeps the turn open for the revert.
				if len(c.next) > 0 || c.during {
					fakeCall(ctx, host, shellCall("t9", hold))
				}
				return engine.TurnResult{}, nil
			}}
			s.startFake(wire.Spec{ID: "s1", Cwd: s.cwd, Mode: "review"}, func() engine.Engine { return eng })
			s.do(command.Send{Text: "go"})
			from := 0
			if c.during {
				ev, i := s.waitType(0, event.AskOpened)
				appendLate(t, path)
				close(written)
				s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionDeny})
				from = i + 1
			} else {
				_, i := s.waitFor(0, "t1 finished", func(ev event.Event) bool { return ev.Type == event.ToolFinished })
				appendLate(t, path)
				close(written)
				from = i + 1
			}

			open := len(c.next) > 0 || c.during
			var staged event.HunkStagedData
			if open {
				staged = waitStaged(t, s, from, "a.txt")
			} else {
				end, _ := s.waitType(from, event.TurnEnded)
				for _, e := range s.all(event.HunkStaged) {
					if d := decode[event.HunkStagedData](t, e); d.Path == "a.txt" && e.Seq < end.Seq {
						staged = d
					}
				}
			}
			if staged.EditID == "" || staged.ToolID != "" || !staged.Auto || len(staged.Edit.Hunks) != 1 || !strings.Contains(hunkText(staged.Edit.Hunks[0].Lines), "+late") {
				t.Fatalf("staged %+v, want a.txt's appended line, by no tool call:\n%s", staged, s.dump())
			}
			if by := appliedBy(t, s, staged.EditID); by != "outside" {
				t.Fatalf("editApplied by %q, want outside:\n%s", by, s.dump())
			}
			// Revertible while the turn is open, and what the turn's end
			// found once it has ended (until the next turn starts).
			s.do(command.DecideHunk{EditID: staged.EditID, HunkID: "h1", Decision: command.DecisionReject})
			if data, _ := os.ReadFile(path); string(data) != "early\n" {
				t.Fatalf("after the revert a.txt = %q", data)
			}
			if open {
				finishHeld(t, s, from)
			}
			checkNoDuplicates(t, s)
			if n := len(s.all(event.HunkStaged)) - len(c.next)*boolInt(c.next != nil && c.next[0].Edit != nil); n != 1 {
				t.Fatalf("%d captured edits, want 1:\n%s", n, s.dump())
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendLate appends a line to the file at path, as a background process
// would.
func appendLate(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("late\n"); err != nil {
		t.Fatal(err)
	}
}

// waitStaged waits for the hunkStaged of path at or after index from.
func waitStaged(t *testing.T, s *session, from int, path string) event.HunkStagedData {
	t.Helper()
	ev, _ := s.waitFor(from, "hunkStaged of "+path, func(ev event.Event) bool {
		return ev.Type == event.HunkStaged && decode[event.HunkStagedData](t, ev).Path == path
	})
	return decode[event.HunkStagedData](t, ev)
}

// finishHeld answers what holds the turn after index from (an ask is
// denied, a review-mode edit accepted) until the turn ends.
func finishHeld(t *testing.T, s *session, from int) {
	t.Helper()
	for {
		ev, i := s.waitFor(from, "an ask, a review or the turn's end", func(ev event.Event) bool {
			switch ev.Type {
			case event.AskOpened, event.TurnEnded:
				return true
			case event.HunkStaged:
				return !decode[event.HunkStagedData](t, ev).Auto
			}
			return false
		})
		switch ev.Type {
		case event.TurnEnded:
			return
		case event.AskOpened:
			s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionDeny})
		case event.HunkStaged:
			d := decode[event.HunkStagedData](t, ev)
			for _, h := range d.Edit.Hunks {
				s.do(command.DecideHunk{EditID: d.EditID, HunkID: h.ID, Decision: command.DecisionAccept})
			}
		}
		from = i + 1
	}
}

// appliedBy waits for the editApplied of editID (not a revert) and
// returns who it says wrote the edit.
func appliedBy(t *testing.T, s *session, editID string) string {
	t.Helper()
	ev, _ := s.waitFor(0, "editApplied of "+editID, func(ev event.Event) bool {
		if ev.Type != event.EditApplied {
			return false
		}
		d := decode[event.EditAppliedData](t, ev)
		return d.EditID == editID && !d.Reverted
	})
	return decode[event.EditAppliedData](t, ev).By
}

// checkNoDuplicates fails when a path was staged twice with the same
// hunks: a write reported again.
func checkNoDuplicates(t *testing.T, s *session) {
	t.Helper()
	seen := map[string]string{}
	for _, ev := range s.all(event.HunkStaged) {
		d := decode[event.HunkStagedData](t, ev)
		key := d.Path
		for _, h := range d.Edit.Hunks {
			key += "\x00" + hunkText(h.Lines)
		}
		if prev, ok := seen[key]; ok {
			t.Fatalf("%s staged twice (%s and %s):\n%s", d.Path, prev, d.EditID, s.dump())
		}
		seen[key] = d.EditID
	}
}

// TestReviewedEditsAreNotCapturedAgain runs the engine's own edit tool in
// review and auto mode, with shell calls around it and a background
// writer that appends to the edited file after the edit: the edit is
// staged once (by review), the later append once (outside a tool call),
// and the hunks Corral writes or takes back out itself are never
// captured.
func TestReviewedEditsAreNotCapturedAgain(t *testing.T) {
	const scenario = `
turns:
  - steps:
      - tool: shell
        command: "true"
      - tool: edit
        path: a.txt
        old: "two"
        new: "2"
      - tool: shell
        command: %q
      - tool: shell
        command: "true"
      - tool: shell
        command: "corral-test-hold"
      - tool: shell
        command: "true"
      - tool: shell
        command: "corral-test-hold"
      - say: "Done."
`
	for _, mode := range []string{"review", "auto"} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, strings.Replace(scenario, "%q", quoteYAML(backgroundWriter), 1), func(sp *wire.Spec) {
				content := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n"
				if err := os.WriteFile(filepath.Join(sp.Cwd, "a.txt"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"go.fifo", "done.fifo"} {
					if err := syscall.Mkfifo(filepath.Join(sp.Cwd, f), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				sp.Mode = mode
			})
			s.do(command.Send{Text: "go"})
			if mode == "review" {
				d := waitStaged(t, s, 0, "a.txt")
				s.do(command.DecideHunk{EditID: d.EditID, HunkID: "h1", Decision: command.DecisionAccept})
			}
			ev, i := s.waitType(0, event.AskOpened)
			staged := s.all(event.HunkStaged)
			if len(staged) != 1 {
				t.Fatalf("%d edits staged by the first hold, want the edit alone:\n%s", len(staged), s.dump())
			}
			edit := decode[event.HunkStagedData](t, staged[0])
			releaseWriter(t, s.cwd)
			s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionDeny})
			late := waitStaged(t, s, i, "a.txt")
			if late.ToolID != "" || appliedBy(t, s, late.EditID) != "outside" {
				t.Fatalf("the append was staged as %+v by %q:\n%s", late, appliedBy(t, s, late.EditID), s.dump())
			}
			// The append is shown against the edit's bytes: one hunk,
			// with "2" as context, not the edit's change again.
			if len(late.Edit.Hunks) != 1 || late.Edit.Hunks[0].Removed != 0 || late.Edit.Hunks[0].Added != 1 {
				t.Fatalf("the append's edit %+v, want one added line", late.Edit)
			}
			// Corral takes the edit's hunk back out itself (auto mode
			// only: review mode's decisions are final once accepted),
			// then the append: neither write is captured.
			if mode == "auto" {
				s.do(command.DecideHunk{EditID: edit.EditID, HunkID: "h1", Decision: command.DecisionReject})
			}
			s.do(command.DecideHunk{EditID: late.EditID, HunkID: "h1", Decision: command.DecisionReject})
			want := "one\n2\nthree\nfour\nfive\nsix\nseven\neight\nnine\n"
			if mode == "auto" {
				want = strings.Replace(want, "2", "two", 1)
			}
			if data, _ := os.ReadFile(filepath.Join(s.cwd, "a.txt")); string(data) != want {
				t.Fatalf("after the reverts a.txt = %q, want %q", data, want)
			}
			finishHeld(t, s, i+1)
			if n := len(s.all(event.HunkStaged)); n != 2 {
				t.Fatalf("%d edits staged, want the edit and the append:\n%s", n, s.dump())
			}
			checkNoDuplicates(t, s)
		})
	}
}
