package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// TestEngineEditWhoseWriteFailsIsRecordedReverted accepts an engine's edit
// (by a person in review mode, at once in auto mode) and then lets the
// engine's own write fail or not happen. An accepted edit is recorded as
// applied by the engine from the verdict on; when the call then fails and
// the file lacks the edit, the log must say the edit was reverted, with
// the engine's reason, and a reject of its hunks must be refused instead of
// failing on the file. When the file has the edit after all, the record
// stands.
func TestEngineEditWhoseWriteFailsIsRecordedReverted(t *testing.T) {
	const hold = "corral-test-hold" // not allowed: the gate asks, which keeps the turn open
	cases := []struct {
		name string
		mode string
		// folderBecomesFile replaces the edit's folder by a file after the
		// verdict, as a command left running can: the write fails.
		folderBecomesFile bool
		write             bool   // the engine writes the file
		outcome           string // overrides the outcome of the write
		reverted          bool
		conflict          string // in the reverted record
	}{
		{name: "review: the folder became a file", mode: "review", folderBecomesFile: true, write: true, reverted: true, conflict: "not a directory"},
		{name: "auto: the folder became a file", mode: "auto", folderBecomesFile: true, write: true, reverted: true, conflict: "not a directory"},
		{name: "review: stopped before it wrote", mode: "review", outcome: "stopped", reverted: true, conflict: "the call ended stopped"},
		{name: "review: written, then the call failed", mode: "review", write: true, outcome: "error"},
		{name: "auto: written", mode: "auto", write: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir()}
			dir := filepath.Join(s.cwd, "build")
			path := filepath.Join(dir, "f.txt")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			eng := &fakeEngine{turn: func(ctx context.Context, _ engine.TurnInput, host engine.Host) (engine.TurnResult, error) {
				call := engine.ToolCall{ID: "t1", Tool: "Write", Kind: engine.KindEdit, Path: path,
					Edit: &engine.EditProposal{Path: path, Before: []byte("old\n"), Existed: true, After: []byte("new\n")}}
				host.Emit(event.ToolStarted, event.ToolStartedData{ToolID: call.ID, Tool: call.Tool, Kind: string(call.Kind)})
				if v := host.Permit(ctx, call); !v.Allow {
					t.Errorf("the edit was refused: %s", v.Message)
				}
				if c.folderBecomesFile {
					if err := os.RemoveAll(dir); err != nil {
						t.Error(err)
					}
					if err := os.WriteFile(dir, []byte("a file now\n"), 0o644); err != nil {
						t.Error(err)
					}
				}
				fin := event.ToolFinishedData{ToolID: call.ID, Tool: call.Tool, Outcome: "ok"}
				if c.write {
					if err := os.WriteFile(path, call.Edit.After, 0o644); err != nil {
						fin.Outcome, fin.Message = "error", err.Error()
					}
				}
				if c.outcome != "" {
					fin.Outcome = c.outcome
				}
				host.Emit(event.ToolFinished, fin)
				fakeCall(ctx, host, shellCall("t2", hold))
				return engine.TurnResult{}, nil
			}}
			s.startFake(wire.Spec{ID: "s1", Cwd: s.cwd, Mode: c.mode}, func() engine.Engine { return eng })
			s.do(command.Send{Text: "go"})
			staged := waitStaged(t, s, 0, "build/f.txt")
			if c.mode == "review" {
				s.do(command.DecideHunk{EditID: staged.EditID, HunkID: "h1", Decision: command.DecisionAccept})
			}
			fin, finAt := s.waitType(0, event.ToolFinished)
			var records []event.EditAppliedData
			for _, ev := range s.all(event.EditApplied) {
				if d := decode[event.EditAppliedData](t, ev); d.EditID == staged.EditID && ev.Seq < fin.Seq {
					records = append(records, d)
				}
			}
			if len(records) == 0 || records[0].By != "engine" || records[0].Reverted || len(records[0].Hunks) != 1 {
				t.Fatalf("editApplied %+v before the call finished, want it applied by the engine first:\n%s", records, s.dump())
			}
			if !c.reverted {
				if len(records) != 1 {
					t.Fatalf("editApplied %+v, want the engine's record to stand:\n%s", records, s.dump())
				}
				if got, _ := os.ReadFile(path); string(got) != "new\n" {
					t.Fatalf("the file holds %q", got)
				}
				finishHeld(t, s, finAt)
				return
			}
			if len(records) != 2 {
				t.Fatalf("editApplied %+v, want the engine's record, then its revert:\n%s", records, s.dump())
			}
			if r := records[1]; !r.Reverted || r.By != "engine" || len(r.Hunks) != 1 || r.Added != 1 || r.Removed != 1 || !strings.Contains(r.Conflict, c.conflict) {
				t.Fatalf("revert record %+v, want the edit's hunk reverted by the engine, the conflict saying %q", r, c.conflict)
			}
			s.waitType(finAt, event.AskOpened)
			reply := s.r.Do(context.Background(), command.DecideHunk{EditID: staged.EditID, HunkID: "h1", Decision: command.DecisionReject})
			if reply.OK || reply.Error == nil || reply.Error.Code != wire.CodeConflict || !strings.Contains(reply.Error.Message, "never written") {
				t.Fatalf("rejecting the unwritten edit: %+v, want a conflict saying it was never written", reply)
			}
			finishHeld(t, s, finAt)
			end, _ := s.waitType(finAt, event.TurnEnded)
			// (A folder that became a file is a change of its own, captured.)
			if d := decode[event.TurnEndedData](t, end); !c.folderBecomesFile && (d.Added != 0 || d.Removed != 0) {
				t.Fatalf("the turn counts %+d/-%d lines of an edit never written", d.Added, d.Removed)
			}
		})
	}
}
