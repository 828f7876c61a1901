package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// TestAcceptedEditRefusedWhenItsPathBecameALink is the review-mode case of
// finding 3 of issue 18: while an edit waits for review, the agent swaps the
// file, or a folder on its path, for a link out of the worktree; when every
// hunk is then accepted the engine would write through the link, so the
// edit is refused, saying why, and nothing outside is written.
func TestAcceptedEditRefusedWhenItsPathBecameALink(t *testing.T) {
	const content = "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n"
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	for _, c := range []struct {
		name, path string
		swap       func(t *testing.T, cwd, outside string)
	}{
		{"the file became a link", "f.txt", func(t *testing.T, cwd, outside string) {
			swapForLink(t, filepath.Join(cwd, "f.txt"), filepath.Join(outside, "f.txt"))
		}},
		{"a folder became a link", "dir/f.txt", func(t *testing.T, cwd, outside string) {
			swapForLink(t, filepath.Join(cwd, "dir"), outside)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			scenario := "turns:\n  - steps:\n      - tool: write\n        path: " + c.path + "\n        content: " + strconv.Quote(content) + "\n"
			s := newSession(t, scenario, nil)
			outside := t.TempDir()
			for _, p := range []string{filepath.Join(s.cwd, c.path), filepath.Join(outside, "f.txt")} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(base), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s.do(command.Send{Text: "edit"})
			staged, i := s.waitType(0, event.HunkStaged)
			d := decode[event.HunkStagedData](t, staged)

			c.swap(t, s.cwd, outside)
			for _, h := range d.Edit.Hunks {
				s.do(command.DecideHunk{HunkID: d.EditID + "/" + h.ID, Decision: command.DecisionAccept})
			}
			fin, _ := s.waitType(i, event.ToolFinished)
			fd := decode[event.ToolFinishedData](t, fin)
			if fd.Outcome != "denied" || !strings.Contains(fd.Message, "changed while it waited") {
				t.Fatalf("tool outcome %q (%s), want the edit refused because its path changed", fd.Outcome, fd.Message)
			}
			applied, _ := s.waitType(i, event.EditApplied)
			if ad := decode[event.EditAppliedData](t, applied); ad.Conflict == "" || len(ad.Hunks) != 0 {
				t.Fatalf("editApplied %+v, want nothing applied and the reason", ad)
			}
			s.waitType(i, event.TurnEnded)
			if got, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(got) != base {
				t.Fatalf("the file outside the worktree was written: %q", got)
			}
		})
	}
}

// swapForLink moves path aside and puts a link to target in its place.
func swapForLink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
