package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// TestRealEditsAndLateWritesAreStagedOnce (#20 §1): through the real Codex
// CLI and Claude Code, in review mode, the model edits a tracked file with
// its own edit tool (Claude Code's Edit, Codex's apply_patch), then runs a
// command that leaves a writer running past its end, which appends to the
// same file while the turn waits for a person. The edit must reach the
// reviewer once (the reviewed edit, no captured copy of it), the append
// once, as a change made outside any tool call against the edit's bytes,
// revertible; nothing else is staged. (Codex ends what a command leaves
// running with the command, so under Codex the edit alone is staged.)
func TestRealEditsAndLateWritesAreStagedOnce(t *testing.T) {
	testenv.NeedGit(t)
	for _, c := range []engineCase{codexCase(t), claudeCase(t)} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cwd, dir := shellWriteRepo(t), t.TempDir()
			for _, f := range []string{"go.fifo", "done.fifo"} {
				if err := syscall.Mkfifo(filepath.Join(cwd, f), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			url := serveScenarioFile(t, "edit-late.json", cwd)
			rec := eventlogtest.New(waitLimit)
			opts := options(t, c, dir, cwd, url, rec)
			opts.Spec.Mode = "review"
			r := startRunner(t, opts)

			ctx := context.Background()
			if reply := r.Do(ctx, command.Send{Text: "Fix tracked.txt."}); !reply.OK {
				t.Fatal(reply.Error)
			}
			ev, _ := rec.WaitFor(t, 0, "the edit's review", func(ev event.Event) bool {
				return ev.Type == event.HunkStaged && !decodeData[event.HunkStagedData](ev).Auto
			})
			edit := decodeData[event.HunkStagedData](ev)
			for _, h := range edit.Edit.Hunks {
				if reply := r.Do(ctx, command.DecideHunk{EditID: edit.EditID, HunkID: h.ID, Decision: command.DecisionAccept}); !reply.OK {
					t.Fatal(reply.Error)
				}
			}
			hold, at := waitHold(t, rec, 0)
			// Codex ends what a command leaves running with the command
			// (its writer never runs): the edit is then the turn's only
			// staged edit.
			lateRuns := c.name != "codex"
			if lateRuns {
				releaseLateWriter(t, cwd, rec)
			}
			if reply := r.Do(ctx, command.Answer{AskID: hold.AskID, Decision: command.DecisionDeny}); !reply.OK {
				t.Fatal(reply.Error)
			}
			hold, at = waitHold(t, rec, at+1)

			if by := appliedBy(rec, edit.EditID); by != "engine" {
				t.Fatalf("the reviewed edit was applied by %q:\n%s", by, rec.Dump())
			}
			want := 1 // the reviewed edit, then the late append
			if lateRuns {
				want = 2
			}
			staged := rec.All(event.HunkStaged)
			if len(staged) != want {
				t.Fatalf("%d edits staged, want %d (the reviewed edit, and the late append when its writer ran):\n%s", len(staged), want, rec.Dump())
			}
			if lateRuns {
				late := decodeData[event.HunkStagedData](staged[1])
				if late.Path != "tracked.txt" || !late.Auto || late.ToolID != "" || appliedBy(rec, late.EditID) != "outside" ||
					len(late.Edit.Hunks) != 1 || late.Edit.Hunks[0].Added != 1 || late.Edit.Hunks[0].Removed != 0 {
					t.Fatalf("the late append was staged as %s by %q, want one added line outside any tool call:\n%s", staged[1].Data, appliedBy(rec, late.EditID), rec.Dump())
				}
				if reply := r.Do(ctx, command.DecideHunk{EditID: late.EditID, HunkID: "h1", Decision: command.DecisionReject}); !reply.OK {
					t.Fatal(reply.Error)
				}
			}
			// The edit's bytes stay (the append, when made, taken back out).
			if got, _ := os.ReadFile(filepath.Join(cwd, "tracked.txt")); string(got) != "one\n2\n" {
				t.Fatalf("tracked.txt holds %q, want the edit's bytes", got)
			}
			if reply := r.Do(ctx, command.Answer{AskID: hold.AskID, Decision: command.DecisionDeny}); !reply.OK {
				t.Fatal(reply.Error)
			}
			rec.WaitFor(t, at, "turnEnded", ofType(event.TurnEnded))
			if n := len(rec.All(event.HunkStaged)); n != want {
				t.Fatalf("%d edits staged by the turn's end, want %d:\n%s", n, want, rec.Dump())
			}
		})
	}
}

// waitHold waits for the ask of holdCommand at or after index from.
func waitHold(t *testing.T, rec *eventlogtest.Recorder, from int) (event.AskOpenedData, int) {
	t.Helper()
	ev, at := rec.WaitFor(t, from, "the ask of "+holdCommand, func(ev event.Event) bool {
		if ev.Type != event.AskOpened {
			return false
		}
		if a := decodeData[event.AskOpenedData](ev); a.Command != holdCommand {
			t.Fatalf("the gate asked about %q, which review mode allows:\n%s", a.Command, rec.Dump())
		}
		return true
	})
	return decodeData[event.AskOpenedData](ev), at
}

// releaseLateWriter lets the scenario's background writer append and
// waits until it has (it says so on done.fifo). The bound is a deadlock
// guard, not a timing goal.
func releaseLateWriter(t *testing.T, cwd string, rec *eventlogtest.Recorder) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		if err := os.WriteFile(filepath.Join(cwd, "go.fifo"), []byte("go\n"), 0o600); err != nil {
			done <- err
			return
		}
		_, err := os.ReadFile(filepath.Join(cwd, "done.fifo"))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the background writer never wrote:\n%s", rec.Dump())
	}
}

// appliedBy returns who the first editApplied of editID that is not a
// revert says wrote it.
func appliedBy(rec *eventlogtest.Recorder, editID string) string {
	for _, ev := range rec.All(event.EditApplied) {
		if a := decodeData[event.EditAppliedData](ev); a.EditID == editID && !a.Reverted {
			return a.By
		}
	}
	return ""
}

func decodeData[T any](ev event.Event) T {
	var v T
	json.Unmarshal(ev.Data, &v)
	return v
}
