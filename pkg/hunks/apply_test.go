package hunks_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

// numbered returns lines "1\n".."n\n" with the given replacements.
func numbered(n int, replace map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := replace[i]; ok {
			b.WriteString(r)
			continue
		}
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func mustDiff(t *testing.T, old, new hunks.Snapshot) *hunks.Edit {
	t.Helper()
	e, err := hunks.Diff("f", old, new)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestApplySubsets(t *testing.T) {
	old := numbered(30, nil)
	new := numbered(30, map[int]string{2: "two\n", 15: "fifteen\nand a half\n", 28: ""})
	e := mustDiff(t, text(old), text(new))
	if got := e.IDs(); !slices.Equal(got, []string{"h1", "h2", "h3"}) {
		t.Fatalf("ids %v", got)
	}
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"none", nil, old},
		{"all", []string{"h1", "h2", "h3"}, new},
		{"first", []string{"h1"}, numbered(30, map[int]string{2: "two\n"})},
		{"middle", []string{"h2"}, numbered(30, map[int]string{15: "fifteen\nand a half\n"})},
		{"last", []string{"h3"}, numbered(30, map[int]string{28: ""})},
		{"out of order and repeated", []string{"h3", "h1", "h3"}, numbered(30, map[int]string{2: "two\n", 28: ""})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Apply(text(old), tt.ids)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data) != tt.want || !got.Exists {
				t.Errorf("got %q\nwant %q", got.Data, tt.want)
			}
		})
	}
}

func TestApplyKeepsBytesExactly(t *testing.T) {
	old := "keep\r\nold one\r\nkeep\nkeep\nkeep\nkeep\nkeep\nkeep\ncaf\xe9\nold two\r\nend"
	new := "keep\r\nnew one\nkeep\nkeep\nkeep\nkeep\nkeep\nkeep\ncaf\xe9\nnew two\r\nend\r\n"
	e := mustDiff(t, text(old), text(new))
	if len(e.Hunks) != 2 {
		t.Fatalf("%d hunks, want 2", len(e.Hunks))
	}
	got, err := e.Apply(text(old), []string{"h2"})
	if err != nil {
		t.Fatal(err)
	}
	want := "keep\r\nold one\r\nkeep\nkeep\nkeep\nkeep\nkeep\nkeep\ncaf\xe9\nnew two\r\nend\r\n"
	if string(got.Data) != want {
		t.Errorf("got %q\nwant %q", got.Data, want)
	}
	if strings.Contains(string(got.Data), "new one") {
		t.Error("a rejected hunk's bytes reached the result")
	}
}

func TestApplyOntoDriftedFile(t *testing.T) {
	old := numbered(20, nil)
	new := numbered(20, map[int]string{10: "ten\n"})
	e := mustDiff(t, text(old), text(new))
	tests := []struct {
		name    string
		current string
		want    string
	}{
		{"lines added above", "a\nb\n" + old, "a\nb\n" + new},
		{"lines removed above", numbered(20, map[int]string{1: "", 2: "", 3: ""}), numbered(20, map[int]string{1: "", 2: "", 3: "", 10: "ten\n"})},
		{"lines changed below", numbered(20, map[int]string{19: "nineteen\n"}), numbered(20, map[int]string{10: "ten\n", 19: "nineteen\n"})},
		{"file grew a lot", strings.Repeat("pad\n", 500) + old, strings.Repeat("pad\n", 500) + new},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Apply(text(tt.current), e.IDs())
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data) != tt.want {
				t.Errorf("got %q\nwant %q", got.Data, tt.want)
			}
		})
	}
}

// A later hunk is looked for where the previous one turned out to be.
func TestApplyCarriesDriftAcrossHunks(t *testing.T) {
	old := numbered(40, nil)
	new := numbered(40, map[int]string{5: "five\n", 35: "thirty-five\n"})
	e := mustDiff(t, text(old), text(new))
	current := "x\n" + old
	got, err := e.Apply(text(current), e.IDs())
	if err != nil {
		t.Fatal(err)
	}
	if want := "x\n" + new; string(got.Data) != want {
		t.Errorf("got %q\nwant %q", got.Data, want)
	}
}

func TestApplyConflicts(t *testing.T) {
	unit := "c1\nc2\nc3\nbody\nc4\nc5\nc6\n"
	repeated := "p1\np2\np3\np4\n" + unit + "g1\ng2\ng3\ng4\ng5\ng6\ng7\n" + unit
	tests := []struct {
		name     string
		old, new hunks.Snapshot
		ids      []string
		current  hunks.Snapshot
		reason   hunks.Reason
		line     int
		matches  []int
		contains string
	}{
		{
			name: "context edited away",
			old:  text(numbered(20, nil)), new: text(numbered(20, map[int]string{10: "ten\n"})),
			current: text(numbered(20, map[int]string{9: "nine\n"})),
			reason:  hunks.ReasonNotFound, line: 7, contains: "hunk h1 (@@ -7,7 +7,7 @@): context not found near line 7",
		},
		{
			name: "removed line already gone",
			old:  text(numbered(20, nil)), new: text(numbered(20, map[int]string{10: "ten\n"})),
			current: text(numbered(20, map[int]string{10: ""})),
			reason:  hunks.ReasonNotFound, line: 7,
		},
		{
			name: "context repeated in a drifted file",
			old:  text(repeated), new: text(strings.Replace(repeated, "body", "BODY", 1)),
			current: text("drift\n" + repeated),
			reason:  hunks.ReasonAmbiguous, matches: []int{6, 20}, contains: "context is ambiguous at lines 6, 20",
		},
		{
			name: "hunk at the top no longer at the top",
			old:  text("a\nb\nc\nd\ne\nf\n"), new: text("A\nb\nc\nd\ne\nf\n"),
			current: text("new first line\na\nb\nc\nd\ne\nf\n"),
			reason:  hunks.ReasonNotFound, line: 1,
		},
		{
			name: "hunk at the end no longer at the end",
			old:  text("a\nb\nc\nd\ne\nf\n"), new: text("a\nb\nc\nd\ne\nF\n"),
			current: text("a\nb\nc\nd\ne\nf\nappended\n"),
			reason:  hunks.ReasonNotFound, line: 3,
		},
		{
			name: "final newline added since",
			old:  text("a\nb"), new: text("a\nc"),
			current: text("a\nb\n"),
			reason:  hunks.ReasonNotFound, line: 1,
		},
		{
			name: "modified file deleted",
			old:  text("a\n"), new: text("b\n"),
			current: hunks.Snapshot{},
			reason:  hunks.ReasonFileMissing, contains: "file does not exist",
		},
		{
			name: "created file exists",
			old:  hunks.Snapshot{}, new: text("b\n"),
			current: text(""),
			reason:  hunks.ReasonFileExists,
		},
		{
			name: "deleted file changed",
			old:  text("a\nb\n"), new: hunks.Snapshot{},
			current: text("a\nb\nc\n"),
			reason:  hunks.ReasonNotFound, line: 1,
		},
		{
			name: "deleted empty file no longer empty",
			old:  text(""), new: hunks.Snapshot{},
			current: text("x"),
			reason:  hunks.ReasonNotFound,
		},
		{
			name: "emptied file filled",
			old:  text(""), new: text("a\n"),
			current: text("b\n"),
			reason:  hunks.ReasonNotFound,
		},
		{
			name: "binary file changed",
			old:  text("\x00one"), new: text("\x00two"),
			current: text("\x00three"),
			reason:  hunks.ReasonChanged, contains: "binary file has changed",
		},
		{
			name: "binary file missing",
			old:  text("\x00one"), new: text("\x00two"),
			current: hunks.Snapshot{},
			reason:  hunks.ReasonFileMissing,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustDiff(t, tt.old, tt.new)
			ids := tt.ids
			if ids == nil {
				ids = e.IDs()
			}
			got, err := e.Apply(tt.current, ids)
			if !errors.Is(err, hunks.ErrConflict) {
				t.Fatalf("Apply = %s, %v; want a conflict", show(got), err)
			}
			var c *hunks.ConflictError
			if !errors.As(err, &c) {
				t.Fatalf("%T is not a *ConflictError", err)
			}
			if c.Reason != tt.reason || c.Path != "f" || c.Hunk != "h1" {
				t.Errorf("conflict %+v, want reason %q for f h1", c, tt.reason)
			}
			if tt.line != 0 && c.Line != tt.line {
				t.Errorf("line %d, want %d", c.Line, tt.line)
			}
			if !slices.Equal(c.Matches, tt.matches) {
				t.Errorf("matches %v, want %v", c.Matches, tt.matches)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("message %q lacks %q", err, tt.contains)
			}
			if got.Exists || got.Data != nil {
				t.Errorf("a conflict returned content %s", show(got))
			}
		})
	}
}

// Repeated context is no problem while the file is the version the edit
// was made against: each hunk goes where it was recorded.
func TestApplyUndriftedRepeatedContext(t *testing.T) {
	block := "open\nbody\nclose\n"
	old := block + "gap1\ngap2\ngap3\ngap4\ngap5\ngap6\ngap7\n" + block
	new := block + "gap1\ngap2\ngap3\ngap4\ngap5\ngap6\ngap7\n" + strings.Replace(block, "body", "BODY", 1)
	e := mustDiff(t, text(old), text(new))
	got, err := e.Apply(text(old), e.IDs())
	if err != nil || string(got.Data) != new {
		t.Errorf("Apply = %s, %v; want %q", show(got), err, new)
	}
	reverted, err := e.Revert(text(new), e.IDs())
	if err != nil || string(reverted.Data) != old {
		t.Errorf("Revert = %s, %v; want %q", show(reverted), err, old)
	}
}

func TestApplyWithoutIDsReturnsCurrent(t *testing.T) {
	e := mustDiff(t, text("a\n"), text("b\n"))
	for _, current := range []hunks.Snapshot{{}, text("anything\n")} {
		got, err := e.Apply(current, nil)
		if err != nil || !sameSnapshot(got, current) {
			t.Errorf("Apply(%s, none) = %s, %v", show(current), show(got), err)
		}
	}
}

func TestApplyUnknownHunk(t *testing.T) {
	e := mustDiff(t, text("a\n"), text("b\n"))
	_, err := e.Apply(text("a\n"), []string{"h1", "h7"})
	if !errors.Is(err, hunks.ErrUnknownHunk) || errors.Is(err, hunks.ErrConflict) {
		t.Errorf("err = %v, want ErrUnknownHunk", err)
	}
	if _, err := e.Revert(text("b\n"), []string{"x"}); !errors.Is(err, hunks.ErrUnknownHunk) {
		t.Errorf("Revert err = %v, want ErrUnknownHunk", err)
	}
	if _, err := e.PatchHunks([]string{"h2"}); !errors.Is(err, hunks.ErrUnknownHunk) {
		t.Errorf("PatchHunks err = %v, want ErrUnknownHunk", err)
	}
}

func TestApplyCreatesAndDeletes(t *testing.T) {
	tests := []struct {
		name              string
		old, new, current hunks.Snapshot
		want              hunks.Snapshot
	}{
		{"create", hunks.Snapshot{}, text("a\nb"), hunks.Snapshot{}, text("a\nb")},
		{"create empty", hunks.Snapshot{}, text(""), hunks.Snapshot{}, text("")},
		{"delete", text("a\r\nb\n"), hunks.Snapshot{}, text("a\r\nb\n"), hunks.Snapshot{}},
		{"delete empty", text(""), hunks.Snapshot{}, text(""), hunks.Snapshot{}},
		{"create binary", hunks.Snapshot{}, text("\x00\x01"), hunks.Snapshot{}, text("\x00\x01")},
		{"delete binary", text("\x00\x01"), hunks.Snapshot{}, text("\x00\x01"), hunks.Snapshot{}},
		{"modify binary", text("\x00\x01"), text("\x00\x02"), text("\x00\x01"), text("\x00\x02")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustDiff(t, tt.old, tt.new)
			if len(e.Hunks) != 1 {
				t.Fatalf("%d hunks, want one whole-file hunk", len(e.Hunks))
			}
			got, err := e.Apply(tt.current, []string{"h1"})
			if err != nil || !sameSnapshot(got, tt.want) {
				t.Errorf("Apply = %s, %v; want %s", show(got), err, show(tt.want))
			}
			back, err := e.Revert(got, []string{"h1"})
			if err != nil || !sameSnapshot(back, tt.old) {
				t.Errorf("Revert = %s, %v; want %s", show(back), err, show(tt.old))
			}
		})
	}
}

func TestRevert(t *testing.T) {
	old := numbered(30, nil)
	new := numbered(30, map[int]string{2: "two\n", 15: "fifteen\n", 28: "twenty-eight\n"})
	e := mustDiff(t, text(old), text(new))
	t.Run("one hunk from the new version", func(t *testing.T) {
		got, err := e.Revert(text(new), []string{"h2"})
		want := numbered(30, map[int]string{2: "two\n", 28: "twenty-eight\n"})
		if err != nil || string(got.Data) != want {
			t.Errorf("got %s, %v; want %q", show(got), err, want)
		}
	})
	t.Run("one hunk after another was reverted", func(t *testing.T) {
		once, err := e.Revert(text(new), []string{"h1"})
		if err != nil {
			t.Fatal(err)
		}
		twice, err := e.Revert(once, []string{"h3"})
		want := numbered(30, map[int]string{15: "fifteen\n"})
		if err != nil || string(twice.Data) != want {
			t.Errorf("got %s, %v; want %q", show(twice), err, want)
		}
	})
	t.Run("one hunk from a drifted file", func(t *testing.T) {
		current := "header\n" + strings.Replace(new, "20\n", "twenty\n", 1)
		got, err := e.Revert(text(current), []string{"h2"})
		want := "header\n" + strings.Replace(numbered(30, map[int]string{2: "two\n", 28: "twenty-eight\n"}), "20\n", "twenty\n", 1)
		if err != nil || string(got.Data) != want {
			t.Errorf("got %s, %v; want %q", show(got), err, want)
		}
	})
	t.Run("a hunk twice", func(t *testing.T) {
		once, err := e.Revert(text(new), []string{"h2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Revert(once, []string{"h2"}); !errors.Is(err, hunks.ErrConflict) {
			t.Errorf("reverting twice: %v, want a conflict", err)
		}
	})
}

func TestEditHunkLookup(t *testing.T) {
	e := mustDiff(t, text(numbered(30, nil)), text(numbered(30, map[int]string{2: "two\n", 28: "x\n"})))
	h, ok := e.Hunk("h2")
	if !ok || h.ID != "h2" || h.Header != "@@ -25,6 +25,6 @@" {
		t.Errorf("Hunk(h2) = %+v, %v", h, ok)
	}
	if _, ok := e.Hunk("h3"); ok {
		t.Error("Hunk(h3) found a hunk the edit lacks")
	}
}
