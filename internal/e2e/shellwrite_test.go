package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// holdCommand is the scenario's last command: no policy allows it, so the
// gate asks and the turn stays open while the test reviews.
const holdCommand = "corral-hold-for-review"

// TestRealShellWritesAreReviewable (#20 §1): through the real Codex CLI and
// Claude Code, in review mode, the model writes with shell commands rather
// than edit tools (the shell-write scenario: `echo hello > hello.txt`, then
// `sed -i` on a tracked file and `rm` of another). Every change must reach
// the reviewer as a hunk staged by the command, and rejecting the hunks
// must give back the worktree as it was before the turn.
func TestRealShellWritesAreReviewable(t *testing.T) {
	testenv.NeedGit(t)
	for _, c := range []engineCase{codexCase(t), claudeCase(t)} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cwd, dir := shellWriteRepo(t), t.TempDir()
			url := serveScenarioFile(t, "shell-write.json", cwd)
			rec := eventlogtest.New(waitLimit)
			opts := options(t, c, dir, cwd, url, rec)
			opts.Spec.Mode, opts.Spec.Allow = "review", []string{"rm *"}
			r := startRunner(t, opts)
			before := worktreeFiles(t, cwd)

			ctx := context.Background()
			if reply := r.Do(ctx, command.Send{Text: "Create hello.txt, fix tracked.txt and remove gone.txt."}); !reply.OK {
				t.Fatal(reply.Error)
			}
			held, at := rec.WaitFor(t, 0, "the ask of "+holdCommand, func(ev event.Event) bool {
				if ev.Type != event.AskOpened {
					return false
				}
				var a event.AskOpenedData
				json.Unmarshal(ev.Data, &a)
				if a.Command != holdCommand {
					t.Fatalf("the gate asked about %q, which review mode allows:\n%s", a.Command, rec.Dump())
				}
				return true
			})

			// The commands ran (review mode captures, it does not hold
			// back) and each change is a hunk the reviewer sees.
			if got, err := os.ReadFile(filepath.Join(cwd, "hello.txt")); err != nil || string(got) != "hello\n" {
				t.Fatalf("hello.txt holds %q (%v)", got, err)
			}
			applied := map[string]bool{}
			for _, ev := range rec.All(event.EditApplied) {
				var a event.EditAppliedData
				json.Unmarshal(ev.Data, &a)
				if a.By == "command" {
					applied[a.EditID] = true
				}
			}
			var staged []event.HunkStagedData
			kinds := map[string]hunks.Kind{}
			for _, ev := range rec.All(event.HunkStaged) {
				var h event.HunkStagedData
				json.Unmarshal(ev.Data, &h)
				if !h.Auto || !applied[h.EditID] {
					t.Fatalf("edit %s of %s is not a captured change:\n%s", h.EditID, h.Path, rec.Dump())
				}
				staged = append(staged, h)
				kinds[h.Path] = h.Edit.Kind
			}
			want := map[string]hunks.Kind{"hello.txt": hunks.KindCreate, "tracked.txt": hunks.KindModify, "gone.txt": hunks.KindDelete}
			if !maps.Equal(kinds, want) {
				t.Fatalf("captured %v, want %v:\n%s", kinds, want, rec.Dump())
			}

			// Rejecting every hunk, newest first, gives the tree back.
			for i := len(staged) - 1; i >= 0; i-- {
				for _, h := range staged[i].Edit.Hunks {
					if reply := r.Do(ctx, command.DecideHunk{EditID: staged[i].EditID, HunkID: h.ID, Decision: command.DecisionReject}); !reply.OK {
						t.Fatalf("reject %s/%s of %s: %v", staged[i].EditID, h.ID, staged[i].Path, reply.Error)
					}
				}
			}
			if after := worktreeFiles(t, cwd); !maps.Equal(before, after) {
				t.Fatalf("after rejecting every hunk the worktree differs:\nbefore %q\nafter  %q", before, after)
			}
			var ask event.AskOpenedData
			json.Unmarshal(held.Data, &ask)
			if reply := r.Do(ctx, command.Answer{AskID: ask.AskID, Decision: command.DecisionDeny}); !reply.OK {
				t.Fatal(reply.Error)
			}
			rec.WaitFor(t, at, "turnEnded", ofType(event.TurnEnded))
			for _, ev := range rec.All(event.HunkStaged) {
				if ev.Seq > held.Seq {
					t.Fatalf("an edit was staged after the reviewer's decisions: %s", ev.Data)
				}
			}
			if after := worktreeFiles(t, cwd); !maps.Equal(before, after) {
				t.Fatalf("after the turn the worktree differs:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// codexCase is the Codex engine with the pinned CLI.
func codexCase(t *testing.T) engineCase {
	for _, c := range cases(t) {
		if c.name == "codex" {
			return c
		}
	}
	t.Fatal("no codex case")
	return engineCase{}
}

// shellWriteRepo makes a git worktree with the files the shell-write
// scenario edits and deletes, committed.
func shellWriteRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"tracked.txt": "one\ntwo\n", "gone.txt": "to be removed\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// worktreeFiles reads every file outside .git, by path.
func worktreeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			out[rel+"/"] = ""
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
