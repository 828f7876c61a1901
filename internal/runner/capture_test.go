package runner

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// shellThenEdit runs a shell command that writes in the worktree, then
// proposes an edit, which in review mode holds the turn open while the
// test looks at (and reverts) what the command wrote.
const shellThenEdit = `
turns:
  - steps:
      - tool: shell
        command: %q
      - tool: write
        path: notes.txt
        content: "held\n"
      - say: "Done."
`

// stagedByCommand returns the hunkStaged events of captured changes (they
// are followed by an editApplied by "command"), by path.
func stagedByCommand(t *testing.T, s *session) map[string]event.HunkStagedData {
	t.Helper()
	by := map[string]bool{}
	for _, ev := range s.all(event.EditApplied) {
		d := decode[event.EditAppliedData](t, ev)
		if d.By == "command" && !d.Reverted {
			by[d.EditID] = true
		}
	}
	out := map[string]event.HunkStagedData{}
	for _, ev := range s.all(event.HunkStaged) {
		d := decode[event.HunkStagedData](t, ev)
		if by[d.EditID] {
			if !d.Auto {
				t.Fatalf("captured edit %s is not auto", d.EditID)
			}
			out[d.Path] = d
		}
	}
	return out
}

func TestShellWritesBecomeRevertibleHunks(t *testing.T) {
	cases := []struct {
		name    string
		setup   map[string]string // files in the worktree before the session
		command string
		asks    bool              // the gate asks first; a person allows it
		want    map[string]string // captured path → edit kind
		revert  string            // path whose hunk the reviewer takes back out
		after   map[string]string // file → content after the revert ("" = absent)
	}{
		{
			name:    "a redirect creates a file",
			command: "echo hi > out.txt",
			want:    map[string]string{"out.txt": "create"},
			revert:  "out.txt",
			after:   map[string]string{"out.txt": ""},
		},
		{
			name:    "sed -i changes a file in place",
			setup:   map[string]string{"a.txt": "one\ntwo\n"},
			command: "sed -i s/two/2/ a.txt",
			want:    map[string]string{"a.txt": "modify"},
			revert:  "a.txt",
			after:   map[string]string{"a.txt": "one\ntwo\n"},
		},
		{
			name:    "rm deletes an ignored file",
			setup:   map[string]string{".gitignore": "*.log\n", "build.log": "old\n"},
			command: "rm build.log",
			asks:    true,
			want:    map[string]string{"build.log": "delete"},
			revert:  "build.log",
			after:   map[string]string{"build.log": "old\n"},
		},
		{
			name:    "a binary file",
			command: "printf 'a\\000b' > blob.bin",
			want:    map[string]string{"blob.bin": "create"},
		},
		{
			name:    "a rename is a create and a delete",
			setup:   map[string]string{"old.txt": "x\n"},
			command: "mv old.txt new.txt",
			asks:    true,
			want:    map[string]string{"new.txt": "create", "old.txt": "delete"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, strings.Replace(shellThenEdit, "%q", quoteYAML(c.command), 1), func(sp *wire.Spec) {
				for name, content := range c.setup {
					if err := os.WriteFile(filepath.Join(sp.Cwd, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				sp.Mode = "review"
			})
			s.do(command.Send{Text: "go"})
			if c.asks {
				ev, _ := s.waitType(0, event.AskOpened)
				s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionAllow})
			}
			// The write of notes.txt waits for review: the turn is open.
			held := waitStagedPath(t, s, "notes.txt")
			got := stagedByCommand(t, s)
			if len(got) != len(c.want) {
				t.Fatalf("captured %v, want %v:\n%s", keys(got), c.want, s.dump())
			}
			for path, kind := range c.want {
				d, ok := got[path]
				if !ok || string(d.Edit.Kind) != kind || len(d.Edit.Hunks) == 0 {
					t.Fatalf("%s: captured %+v, want a %s with hunks", path, d, kind)
				}
			}
			if c.revert != "" {
				d := got[c.revert]
				s.do(command.DecideHunk{EditID: d.EditID, HunkID: "h1", Decision: command.DecisionReject})
				for name, want := range c.after {
					data, err := os.ReadFile(filepath.Join(s.cwd, name))
					if want == "" && !os.IsNotExist(err) || want != "" && string(data) != want {
						t.Fatalf("after the revert %s = %q, %v; want %q", name, data, err, want)
					}
				}
			}
			s.do(command.DecideHunk{EditID: held.EditID, HunkID: "h1", Decision: command.DecisionAccept})
			ended, _ := s.waitType(0, event.TurnEnded)
			te := decode[event.TurnEndedData](t, ended)
			if te.Outcome != "done" {
				t.Fatalf("turn %+v", te)
			}
		})
	}
}

// TestRejectingNewestFirstRestoresTheTree rejects every hunk a shell call
// staged, newest edit first, while another shell call waits for approval,
// its baseline already taken: the tree (files, symlinks, folders) must be
// as before the call, and the reverts must be no change of the waiting call
// (it never ran).
func TestRejectingNewestFirstRestoresTheTree(t *testing.T) {
	cases := []struct {
		name    string
		setup   map[string]string // a content starting "->" makes a symlink
		command string
	}{
		{"a file and a symlink renamed", map[string]string{"old.txt": "x\n", "link": "->old.txt"}, "mv old.txt new.txt; mv link renamed-link"},
		{"a file moved into a folder of its own name", map[string]string{"a.txt": "x\n"}, "mv a.txt b && mkdir a.txt && mv b a.txt/a.txt"},
		{"a folder replaced by a file", map[string]string{"d/a.txt": "a\n", "d/e/b.txt": "b\n"}, "rm -r d && echo x > d"},
		{"a symlink replaced by a file", map[string]string{"a.txt": "x\n", "link": "->a.txt"}, "rm link && echo text > link"},
		{"files in new folders", nil, "mkdir -p gen/a/b && echo x > gen/a/b/c.txt && echo y > gen/top.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const scenario = `
turns:
  - steps:
      - tool: shell
        command: %q
      - tool: shell
        command: "corral-test-hold"
      - say: "Done."
`
			var before map[string]string
			s := newSession(t, strings.Replace(scenario, "%q", quoteYAML(c.command), 1), func(sp *wire.Spec) {
				for name, content := range c.setup {
					p := filepath.Join(sp.Cwd, name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					var err error
					if target, ok := strings.CutPrefix(content, "->"); ok {
						err = os.Symlink(target, p)
					} else {
						err = os.WriteFile(p, []byte(content), 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				before = treeOf(t, sp.Cwd)
				sp.Mode, sp.Allow = "review", []string{"mv *", "mkdir *", "rm *"}
			})
			s.do(command.Send{Text: "go"})
			ev, i := s.waitType(0, event.AskOpened) // the hold: its toolStarted took a baseline
			if a := decode[event.AskOpenedData](t, ev); a.Command != "corral-test-hold" {
				t.Fatalf("asked about %q:\n%s", a.Command, s.dump())
			}
			staged := s.all(event.HunkStaged)
			if len(staged) == 0 {
				t.Fatalf("nothing captured:\n%s", s.dump())
			}
			for j := len(staged) - 1; j >= 0; j-- {
				d := decode[event.HunkStagedData](t, staged[j])
				for _, h := range d.Edit.Hunks {
					if reply := s.r.Do(context.Background(), command.DecideHunk{EditID: d.EditID, HunkID: h.ID, Decision: command.DecisionReject}); !reply.OK {
						t.Fatalf("reject %s/%s of %s: %v\n%s", d.EditID, h.ID, d.Path, reply.Error, s.dump())
					}
				}
			}
			if after := treeOf(t, s.cwd); !maps.Equal(before, after) {
				t.Fatalf("after rejecting every hunk:\n%q\nwant\n%q", after, before)
			}
			s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionDeny})
			s.waitType(i, event.TurnEnded)
			for _, e := range s.all(event.HunkStaged) {
				if e.Seq > ev.Seq {
					t.Errorf("edit staged after the reverts: %s", e.Data)
				}
			}
		})
	}
}

// treeOf reads the worktree at root: files by content, symlinks by
// target ("->target"), folders as "dir/".
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			out[rel+"/"] = ""
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "->" + target
			return err
		default:
			data, err := os.ReadFile(p)
			out[rel] = string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadonlyModeCapturesNothing(t *testing.T) {
	s := newSession(t, "turns:\n  - steps:\n      - tool: shell\n        command: \"ls\"\n", func(sp *wire.Spec) { sp.Mode = "readonly" })
	s.do(command.Send{Text: "go"})
	s.waitType(0, event.TurnEnded)
	if _, err := os.Stat(filepath.Join(s.dir, CaptureFolder)); !os.IsNotExist(err) {
		t.Fatalf("readonly mode built a capture: %v", err)
	}
}

func waitStagedPath(t *testing.T, s *session, path string) event.HunkStagedData {
	t.Helper()
	from := 0
	for {
		ev, i := s.waitType(from, event.HunkStaged)
		if d := decode[event.HunkStagedData](t, ev); d.Path == path && !d.Auto {
			return d
		}
		from = i + 1
	}
}

func quoteYAML(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
