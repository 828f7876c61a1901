package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
	"github.com/corral-dev/corral/pkg/wire"
)

const (
	reviewBase   = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	reviewEdited = "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n"
)

// stagedTwoHunks stages, in a fresh worktree, an edit of f.txt with two
// hunks (h1: line 1, h2: line 13). auto mode writes the edit first, as an
// engine does once the edit is allowed.
func stagedTwoHunks(t *testing.T, auto bool) (*review, *stagedEdit, *emitted, string) {
	t.Helper()
	cwd := t.TempDir()
	path := filepath.Join(cwd, "f.txt")
	content := reviewBase
	if auto {
		content = reviewEdited
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ed, err := hunks.Diff("f.txt", hunks.Snapshot{Exists: true, Data: []byte(reviewBase)}, hunks.Snapshot{Exists: true, Data: []byte(reviewEdited)})
	if err != nil || len(ed.Hunks) != 2 {
		t.Fatalf("diff: %v, %d hunks", err, len(ed.Hunks))
	}
	var ev emitted
	rv := newReview(cwd, ev.emit, nil)
	rv.beginTurn()
	return rv, rv.stage("e1", 1, "tool1", path, ed, auto, nil), &ev, path
}

func TestReviewVerdictFollowsTheDecisions(t *testing.T) {
	cases := []struct {
		name      string
		decisions [2]string
		allow     bool
		applied   bool
		file      string
		message   string
		added     int
	}{
		// All accepted: the engine writes the edit itself.
		{"all accepted", [2]string{command.DecisionAccept, command.DecisionAccept}, true, false, reviewBase, "", 2},
		{"some accepted", [2]string{command.DecisionReject, command.DecisionAccept}, false, true,
			strings.Replace(reviewBase, "13\n", "B\n", 1), "Corral applied hunks h2 itself", 1},
		{"none accepted", [2]string{command.DecisionReject, command.DecisionReject}, false, false, reviewBase, "nothing was written", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rv, se, ev, path := stagedTwoHunks(t, false)
			for i, d := range c.decisions {
				if _, err := rv.decide("", "e1/h"+string(rune('1'+i)), d, "note"); err != nil {
					t.Fatal(err)
				}
			}
			rv.wait(context.Background(), se)
			v := rv.verdict(se)
			if v.Allow != c.allow || v.Applied != c.applied || !strings.Contains(v.Message, c.message) {
				t.Fatalf("verdict %+v", v)
			}
			if got, _ := os.ReadFile(path); string(got) != c.file {
				t.Fatalf("file holds %q, want %q", got, c.file)
			}
			if n := len(of[event.HunkDecidedData](ev, event.HunkDecided)); n != 2 {
				t.Fatalf("%d hunkDecided events", n)
			}
			tally := rv.endTurn()
			if tally.added != c.added {
				t.Fatalf("tally %+v, want %d added", tally, c.added)
			}
			if _, err := rv.decide("e1", "h1", command.DecisionAccept, ""); codeOf(err) != wire.CodeNotFound {
				t.Fatalf("a decision after the turn ended: %v", err)
			}
		})
	}
}

func TestReviewRefusesBadDecisions(t *testing.T) {
	rv, _, _, _ := stagedTwoHunks(t, false)
	if _, err := rv.decide("e1", "h1", command.DecisionAccept, ""); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                     string
		editID, hunkID, decision string
		code                     wire.Code
	}{
		{"unknown decision", "e1", "h2", "maybe", wire.CodeBadRequest},
		{"unknown edit", "e9", "h1", command.DecisionAccept, wire.CodeNotFound},
		{"unknown hunk", "e1", "h9", command.DecisionAccept, wire.CodeNotFound},
		{"decided already", "e1", "h1", command.DecisionReject, wire.CodeConflict},
	}
	for _, c := range cases {
		if _, err := rv.decide(c.editID, c.hunkID, c.decision, ""); codeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

func TestReviewNeedsTheEditNamedWhenSeveralWait(t *testing.T) {
	rv, _, _, _ := stagedTwoHunks(t, false)
	// With one edit waiting, the hunk alone names it.
	if d, err := rv.decide("", "h1", command.DecisionAccept, ""); err != nil || d.EditID != "e1" {
		t.Fatalf("decide h1: %+v, %v", d, err)
	}
	ed, _ := hunks.Diff("g.txt", hunks.Snapshot{}, hunks.Snapshot{Exists: true, Data: []byte("x\n")})
	rv.stage("e2", 2, "tool2", filepath.Join(rv.cwd, "g.txt"), ed, false, nil)
	if ids := rv.pendingIDs(); !slices.Equal(ids, []string{"e1", "e2"}) {
		t.Fatalf("pending %v", ids)
	}
	if _, err := rv.decide("", "h2", command.DecisionAccept, ""); codeOf(err) != wire.CodeBadRequest {
		t.Fatalf("an unnamed edit among two: %v", err)
	}
}

func TestReviewAutoModeRejectTakesTheHunkBackOut(t *testing.T) {
	rv, se, ev, path := stagedTwoHunks(t, true)
	rv.wait(context.Background(), se) // decided at once
	if v := rv.verdict(se); !v.Allow {
		t.Fatalf("auto verdict %+v", v)
	}
	if d, err := rv.decide("e1", "h1", command.DecisionAccept, ""); err != nil || d.By != "auto" {
		t.Fatalf("accepting an auto hunk: %+v, %v", d, err)
	}
	if _, err := rv.decide("e1", "h2", command.DecisionReject, "not this"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != strings.Replace(reviewEdited, "B\n", "13\n", 1) {
		t.Fatalf("after rejecting h2: %q", got)
	}
	if _, err := rv.decide("e1", "h2", command.DecisionReject, ""); codeOf(err) != wire.CodeConflict {
		t.Fatalf("a second reject: %v", err)
	}
	applied := of[event.EditAppliedData](ev, event.EditApplied)
	if len(applied) != 2 || applied[0].By != "engine" || !applied[1].Reverted || applied[1].Added != 1 {
		t.Fatalf("editApplied events %+v", applied)
	}
	if tally := rv.endTurn(); tally.added != 1 || len(tally.files) != 1 {
		t.Fatalf("tally %+v: two lines added, one taken back", tally)
	}
}

func TestReviewAutoModeHunkIDAloneNamesTheTurnsOneEdit(t *testing.T) {
	rv, _, _, path := stagedTwoHunks(t, true)
	if _, err := rv.decide("", "h1", command.DecisionReject, ""); err != nil {
		t.Fatalf("rejecting h1 of the turn's one auto edit by hunk id alone: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != strings.Replace(reviewEdited, "A\n", "1\n", 1) {
		t.Fatalf("after rejecting h1: %q", got)
	}
	ed, err := hunks.Diff("g.txt", hunks.Snapshot{}, hunks.Snapshot{Exists: true, Data: []byte("new\n")})
	if err != nil {
		t.Fatal(err)
	}
	rv.stage("e2", 2, "tool2", filepath.Join(rv.cwd, "g.txt"), ed, true, func([]string) error { return nil })
	if _, err := rv.decide("", "h1", command.DecisionReject, ""); codeOf(err) != wire.CodeBadRequest || !strings.Contains(err.Error(), "2 auto-applied edits") {
		t.Fatalf("hunk id alone among two auto edits: %v", err)
	}
	rv.endTurn()
	if _, err := rv.decide("e2", "h1", command.DecisionReject, ""); err != nil {
		t.Fatalf("once the turn ended, before the next started: %v", err)
	}
	rv.beginTurn()
	if _, err := rv.decide("", "h1", command.DecisionReject, ""); codeOf(err) != wire.CodeNotFound {
		t.Fatalf("once the next turn started: %v", err)
	}
}

func TestReviewRejectsWhatIsPendingWhenStoppedOrWithdrawn(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		rv, se, ev, _ := stagedTwoHunks(t, false)
		rv.decide("e1", "h1", command.DecisionAccept, "")
		if n := rv.rejectAll("stopped"); n != 1 {
			t.Fatalf("rejected %d hunks, want the undecided one", n)
		}
		rv.wait(context.Background(), se)
		if n := rv.rejectAll("stopped"); n != 0 {
			t.Fatalf("a second stop rejected %d", n)
		}
		last := of[event.HunkDecidedData](ev, event.HunkDecided)[1]
		if last.HunkID != "h2" || last.By != "stopped" || last.Decision != command.DecisionReject {
			t.Fatalf("hunkDecided %+v", last)
		}
	})
	t.Run("withdrawn", func(t *testing.T) {
		rv, se, ev, _ := stagedTwoHunks(t, false)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rv.wait(ctx, se)
		for _, d := range of[event.HunkDecidedData](ev, event.HunkDecided) {
			if d.By != "cancelled" {
				t.Fatalf("hunkDecided %+v", d)
			}
		}
		if len(rv.pendingIDs()) != 0 {
			t.Fatal("a withdrawn edit still waits")
		}
	})
}
