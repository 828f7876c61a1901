package worktree_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/corral-dev/corral/internal/worktree"
	"github.com/corral-dev/corral/pkg/hunks"
)

// TestReviewedWritesAreNotReportedAgain plays a reviewed writer (an
// engine's edit tool, the runner's own write) announcing a write with
// Expect and ending it with Settle, around scans and other writers: the
// reviewed content is never reported, what any other process wrote is, as
// the difference from the reviewed content once it was written.
func TestReviewedWritesAreNotReportedAgain(t *testing.T) {
	edited := "# project\n\nsome text\nreviewed line\n"
	tests := []struct {
		name    string
		path    string
		content *string // nil: the edit deletes the file
		// steps, in order: "write" (the reviewed writer writes the
		// content), "scan" (an After in the middle, whose changes must
		// be none), "other:SCRIPT" (another process), "settle" /
		// "settle-failed" (the writer reports it wrote, or did not).
		steps []string
		// want is what the After that follows reports, with the
		// content of each changed path as the diff's new side starts.
		want []want
		// base is the content the first reported change's edit starts
		// from ("" for none).
		base string
	}{
		{name: "written then settled", path: "README.md", content: &edited, steps: []string{"write", "settle"}},
		{name: "a scan between the write and the settle", path: "README.md", content: &edited, steps: []string{"write", "scan", "settle"}},
		{name: "a scan before the write", path: "README.md", content: &edited, steps: []string{"scan", "write", "scan", "settle"}},
		{name: "a new file in new folders", path: "gen/deep/new.go", content: ptr("package gen\n"), steps: []string{"write", "scan", "settle"}},
		{name: "a deletion", path: "docs/a.txt", steps: []string{"write", "scan", "settle"}},
		{
			name: "another process appends after the write", path: "README.md", content: &edited,
			steps: []string{"write", "other:echo late >> README.md", "settle"},
			want:  []want{{worktree.Modified, "README.md", ""}}, base: edited,
		},
		{
			name: "another process appends after the settle", path: "README.md", content: &edited,
			steps: []string{"write", "settle", "other:echo late >> README.md"},
			want:  []want{{worktree.Modified, "README.md", ""}}, base: edited,
		},
		{
			name: "another process recreates a deleted file", path: "docs/a.txt",
			steps: []string{"write", "other:echo back > docs/a.txt", "settle"},
			want:  []want{{worktree.Created, "docs/a.txt", ""}},
		},
		{
			name: "a write that did not happen", path: "README.md", content: &edited,
			steps: []string{"scan", "settle-failed"},
		},
		{
			name: "a write that did not happen, and another process's", path: "README.md", content: &edited,
			steps: []string{"other:echo late >> README.md", "settle-failed"},
			want:  []want{{worktree.Modified, "README.md", ""}}, base: base["README.md"],
		},
		{
			name: "its folder replaced by a file after the write", path: "gen/deep/new.go", content: ptr("package gen\n"),
			steps: []string{"write", "other:rm -rf gen && echo f > gen", "settle"},
			want:  []want{{worktree.Deleted, "gen/deep/new.go", ""}, {worktree.Created, "gen", ""}},
		},
		{
			name: "another file written meanwhile is reported", path: "README.md", content: &edited,
			steps: []string{"write", "other:echo x > other.txt", "settle"},
			want:  []want{{worktree.Created, "other.txt", ""}},
		},
	}
	for _, walk := range []bool{false, true} {
		mode := map[bool]string{false: "inotify", true: "walk"}[walk]
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				root := tree(t, base)
				c := open(t, root, walk)
				if err := c.Before(); err != nil {
					t.Fatal(err)
				}
				content := hunks.Snapshot{}
				if tt.content != nil {
					content = hunks.Present([]byte(*tt.content))
				}
				full := filepath.Join(root, filepath.FromSlash(tt.path))
				c.Expect(tt.path, content)
				for _, step := range tt.steps {
					switch {
					case step == "write" && content.Exists:
						os.MkdirAll(filepath.Dir(full), 0o755)
						if err := os.WriteFile(full, content.Data, 0o644); err != nil {
							t.Fatal(err)
						}
					case step == "write":
						if err := os.Remove(full); err != nil {
							t.Fatal(err)
						}
					case step == "scan":
						if got, err := c.After(); err != nil || len(got) != 0 {
							t.Fatalf("a scan before the settle reported %v, %v", got, err)
						}
					case step == "settle" || step == "settle-failed":
						if err := c.Settle(tt.path, content, step == "settle"); err != nil {
							t.Fatal(err)
						}
					default:
						sh(t, root, step[len("other:"):])
					}
				}
				changes, err := c.After()
				if err != nil {
					t.Fatal(err)
				}
				var got []want
				for _, ch := range changes {
					got = append(got, want{ch.Kind, ch.Path, ch.From})
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("changes %v, want %v", got, tt.want)
				}
				if tt.base != "" {
					before := snapshot(t, root)[changes[0].Path]
					// Reverting the change puts back the base, not the
					// file as it was before the reviewed write.
					if err := c.Revert(changes[0], nil); err != nil {
						t.Fatal(err)
					}
					if now := snapshot(t, root)[changes[0].Path]; now != tt.base {
						t.Fatalf("reverting %q gave %q, want %q", before, now, tt.base)
					}
				}
				if again, err := c.After(); err != nil || len(again) != 0 {
					t.Fatalf("a second After: %v, %v; want no change", again, err)
				}
			})
		}
	}
}

func ptr(s string) *string { return &s }

// TestOwnWritesAreNotReported runs writes through Write, by way of a
// temporary file beside the target as atomic writes do, with another
// process's write before it: the own write and its temporary file are
// never reported, the other write is.
func TestOwnWritesAreNotReported(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "inotify", true: "walk"}[walk], func(t *testing.T) {
			root := tree(t, base)
			c := open(t, root, walk)
			if err := c.Before(); err != nil {
				t.Fatal(err)
			}
			sh(t, root, "echo other > other.txt")
			content := hunks.Present([]byte("written by the runner\n"))
			err := c.Write("docs/a.txt", content, func() error {
				tmp := filepath.Join(root, "docs", ".a.txt.tmp")
				if err := os.WriteFile(tmp, content.Data, 0o644); err != nil {
					return err
				}
				return os.Rename(tmp, filepath.Join(root, "docs", "a.txt"))
			})
			if err != nil {
				t.Fatal(err)
			}
			changes, err := c.After()
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, ch := range changes {
				got = append(got, want{ch.Kind, ch.Path, ch.From})
			}
			if w := []want{{worktree.Created, "other.txt", ""}}; !slices.Equal(got, w) {
				t.Fatalf("changes %v, want %v", got, w)
			}
		})
	}
}
